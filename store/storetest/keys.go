package storetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

func hashOf(n int) []byte {
	h := sha256.Sum256(fmt.Appendf(nil, "raw-key-%d", n))
	return h[:]
}

func key(account, id string, n int) store.Key {
	return store.Key{
		ID: id, AccountID: account, Name: "key " + id, Prefix: "tg-" + id, Hash: hashOf(n),
		Kind: store.KindConsole, Enabled: true, CreatedAt: t0.Add(time.Duration(n) * time.Minute),
	}
}

func testKeys(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", 0)
	newAccount(t, s, "a2", 0)
	exp, used := t0.Add(24*time.Hour), t0.Add(time.Hour+7)
	full := key("a", "k1", 1)
	full.Sealed = []byte{1, 2, 3, 0, 255}
	full.RestrictModels, full.AllowedModels = true, []string{"m-1", "m-2"}
	full.ExpiresAt, full.LastUsedAt = &exp, &used
	full.LogsAccountScope, full.Kind = true, store.KindAgent
	full.UserID = "usr-1"
	denyAll := key("a", "k2", 2)
	denyAll.RestrictModels = true // an empty list denies every model
	keys := []store.Key{full, denyAll, key("a2", "k3", 3), key("a", "k0", 0)}
	for _, k := range keys {
		mustNil(t, "create key "+k.ID, s.CreateKey(ctx, k))
	}

	for _, k := range keys {
		t.Run("get "+k.ID, func(t *testing.T) {
			got, err := s.GetKey(ctx, k.ID)
			mustNil(t, "get", err)
			same(t, "by id", normKey(got), k)
			got, err = s.KeyByHash(ctx, k.Hash)
			mustNil(t, "by hash", err)
			same(t, "by hash", normKey(got), k)
		})
	}

	got, err := s.ListKeys(ctx, "a")
	mustNil(t, "list", err)
	var ids []string
	for _, k := range got {
		ids = append(ids, k.ID)
	}
	same(t, "keys of a, oldest first", ids, []string{"k0", "k1", "k2"})

	tests := []struct {
		desc string
		err  error
		want error
	}{
		{"duplicate id", s.CreateKey(ctx, key("a", "k1", 9)), store.ErrExists},
		{"duplicate hash", s.CreateKey(ctx, key("a", "k9", 1)), store.ErrExists},
		{"unknown account", s.CreateKey(ctx, key("nope", "k8", 8)), store.ErrNotFound},
		{"get unknown", func() error { _, err := s.GetKey(ctx, "nope"); return err }(), store.ErrNotFound},
		{"unknown hash", func() error { _, err := s.KeyByHash(ctx, hashOf(99)); return err }(), store.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) { mustIs(t, tc.desc, tc.err, tc.want) })
	}
	if _, err := s.GetKey(ctx, "k9"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("a refused key was stored")
	}
	if n, err := s.KeyUsage(ctx, "never-used"); err != nil || n != 0 {
		t.Fatalf("usage of an unused key = %s, %v; want 0", n, err)
	}
	if ks, err := s.ListKeys(ctx, "nope"); err != nil || len(ks) != 0 {
		t.Fatalf("keys of an unknown account = %+v, %v", ks, err)
	}
}

func testUpdateKey(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", 0)
	k, other := key("a", "k1", 1), key("a", "k2", 2)
	mustNil(t, "create", s.CreateKey(ctx, k))
	mustNil(t, "create other", s.CreateKey(ctx, other))

	k.Name, k.Enabled, k.AllowedModels, k.RestrictModels = "renamed", false, []string{"m"}, true
	mustNil(t, "update", s.UpdateKey(ctx, k))
	got, err := s.GetKey(ctx, k.ID)
	mustNil(t, "get", err)
	same(t, "updated", normKey(got), k)

	oldHash := k.Hash
	k.Hash = hashOf(5)
	mustNil(t, "rehash", s.UpdateKey(ctx, k))
	if _, err := s.KeyByHash(ctx, oldHash); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("old hash still finds the key: %v", err)
	}
	got, err = s.KeyByHash(ctx, k.Hash)
	mustNil(t, "by new hash", err)
	same(t, "by new hash", normKey(got), k)

	taken := k
	taken.Hash = other.Hash
	mustIs(t, "update to another key's hash", s.UpdateKey(ctx, taken), store.ErrExists)
	got, err = s.KeyByHash(ctx, other.Hash)
	mustNil(t, "other by hash", err)
	if got.ID != other.ID {
		t.Fatalf("other key's hash now finds %s", got.ID)
	}
	mustIs(t, "update unknown", s.UpdateKey(ctx, key("a", "nope", 7)), store.ErrNotFound)
	if _, err := s.KeyByHash(ctx, hashOf(7)); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("update of an unknown key indexed its hash")
	}
}

func testDeleteKey(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(10))
	k, keep := key("a", "k1", 1), key("a", "k2", 2)
	mustNil(t, "create", s.CreateKey(ctx, k))
	mustNil(t, "create", s.CreateKey(ctx, keep))
	h := hold("a", "h", cr(1))
	h.KeyID = k.ID
	_, err := s.PlaceHold(ctx, h)
	mustNil(t, "hold", err)
	mustNil(t, "settle", s.Settle(ctx, store.Settlement{HoldID: h.ID, Charge: cr(1), Row: rowFor(h, cr(1))}))

	mustNil(t, "delete", s.DeleteKey(ctx, k.ID))
	if _, err := s.GetKey(ctx, k.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if _, err := s.KeyByHash(ctx, k.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("by hash after delete: %v", err)
	}
	ks, err := s.ListKeys(ctx, "a")
	mustNil(t, "list", err)
	if len(ks) != 1 || ks[0].ID != keep.ID {
		t.Fatalf("keys after delete = %+v, want k2 only", ks)
	}
	mustIs(t, "delete again", s.DeleteKey(ctx, k.ID), store.ErrNotFound)
	if n := keyUsage(t, s, k.ID); n != cr(1) {
		t.Fatalf("usage of a deleted key = %s, want its history (1)", n)
	}
	if rows := accountRows(t, s, "a"); len(rows) != 1 {
		t.Fatalf("rows after delete = %d, want 1", len(rows))
	}
	// The id and hash are free again.
	mustNil(t, "recreate", s.CreateKey(ctx, k))
}

func testTouchKey(t *testing.T, s store.Store) {
	ctx := t.Context()
	newAccount(t, s, "a", cr(10))
	k := key("a", "k1", 1)
	k.LastUsedAt = nil
	mustNil(t, "create", s.CreateKey(ctx, k))
	mustIs(t, "touch an unknown key", s.TouchKey(ctx, "nope", time.Now()), store.ErrNotFound)
	for _, at := range []time.Time{time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), time.Date(2026, 2, 3, 4, 5, 6, 7, time.UTC)} {
		mustNil(t, "touch", s.TouchKey(ctx, k.ID, at))
		got, err := s.GetKey(ctx, k.ID)
		mustNil(t, "get", err)
		if got.LastUsedAt == nil || !got.LastUsedAt.Equal(at) {
			t.Fatalf("GetKey LastUsedAt = %v, want %v", got.LastUsedAt, at)
		}
		ks, err := s.ListKeys(ctx, "a")
		mustNil(t, "list", err)
		if len(ks) != 1 || ks[0].LastUsedAt == nil || !ks[0].LastUsedAt.Equal(at) {
			t.Fatalf("ListKeys = %+v, want last use %v", ks, at)
		}
	}
	mustNil(t, "delete", s.DeleteKey(ctx, k.ID))
	mustNil(t, "recreate", s.CreateKey(ctx, k))
	if got, err := s.GetKey(ctx, k.ID); err != nil || got.LastUsedAt != nil {
		t.Fatalf("a recreated key has last use %v, %v; want none", got.LastUsedAt, err)
	}
}
