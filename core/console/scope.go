package console

import (
	"context"
	"net/url"
	"slices"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/logsapi"
	"github.com/tollgate-gw/tollgate/store"
)

// What a person may see of the account, and how the log site reads it
// through the logs API's code. An owner reads the whole account (scope
// account, optionally one key); anyone else reads their own keys only,
// one at a time (scope key), as a key reads its own calls through the API.

// ownKeys are the keys a visitor manages: every key of the account for an
// owner; their own for anyone else. Newest first.
func (c *Console) ownKeys(ctx context.Context, v *visit) ([]store.Key, error) {
	all, err := c.o.Store.ListKeys(ctx, v.User.AccountID)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, k := range all {
		if v.owner() || k.UserID == v.User.ID {
			out = append(out, k)
		}
	}
	slices.Reverse(out)
	return out, nil
}

// mayManage reports whether v may change or reveal k: an owner any key of
// the account, an organization admin its agent keys too, anyone their own.
func mayManage(v *visit, k store.Key) bool {
	if k.AccountID != v.User.AccountID {
		return false
	}
	return v.owner() || k.UserID == v.User.ID || (k.Kind == store.KindAgent && v.orgAdmin())
}

// keyOf reads a key v may manage (another's is not found).
func (c *Console) keyOf(ctx context.Context, v *visit, id string) (store.Key, error) {
	k, err := c.o.Store.GetKey(ctx, id)
	if err == nil && !mayManage(v, k) {
		err = store.ErrNotFound
	}
	return k, err
}

// logScope is how v reads the log site: the viewer and the scope
// parameters for logsapi, and the keys v may pick from. keyID picks one
// key ("" = the whole account for an owner, the most recently used own
// key for anyone else). For someone with no key of their own, ok is false.
type logScope struct {
	viewer logsapi.Viewer
	params url.Values // scope and key_id
	keys   []store.Key
	key    string // the key picked
	whole  bool   // the whole account
}

func (c *Console) logScope(ctx context.Context, v *visit, keyID string) (logScope, bool, error) {
	keys, err := c.ownKeys(ctx, v)
	if err != nil {
		return logScope{}, false, err
	}
	s := logScope{keys: keys, key: keyID, params: url.Values{}}
	if v.owner() {
		s.viewer = logsapi.Viewer{AccountID: v.User.AccountID, AccountScope: true}
		s.params.Set("scope", "account")
		if keyID != "" {
			s.params.Set("key_id", keyID)
		} else {
			s.whole = true
		}
		return s, true, nil
	}
	if len(keys) == 0 {
		return s, false, nil
	}
	if keyID == "" {
		s.key = mostRecent(keys).ID
	} else if !slices.ContainsFunc(keys, func(k store.Key) bool { return k.ID == keyID }) {
		return s, false, apierr.New(apierr.PermissionDenied, "that key is not one of yours: you read the calls of your own keys")
	}
	s.viewer = logsapi.Viewer{AccountID: v.User.AccountID, KeyID: s.key,
		NoAccountScope: "only an account's owners read the whole account's calls"}
	s.params.Set("scope", "key")
	return s, true, nil
}

// mostRecent is the key used last (else made last).
func mostRecent(keys []store.Key) store.Key {
	best := keys[0]
	for _, k := range keys[1:] {
		switch {
		case k.LastUsedAt != nil && (best.LastUsedAt == nil || k.LastUsedAt.After(*best.LastUsedAt)):
			best = k
		case k.LastUsedAt == nil && best.LastUsedAt == nil && k.CreatedAt.After(best.CreatedAt):
			best = k
		}
	}
	return best
}

// viewers are the logsapi viewers whose rows together are everything v
// may see: the account for an owner, each own key for anyone else.
func (c *Console) viewers(ctx context.Context, v *visit) ([]logsapi.Viewer, []url.Values, error) {
	if v.owner() {
		return []logsapi.Viewer{{AccountID: v.User.AccountID, AccountScope: true}}, []url.Values{{"scope": {"account"}}}, nil
	}
	keys, err := c.ownKeys(ctx, v)
	if err != nil {
		return nil, nil, err
	}
	var vs []logsapi.Viewer
	var ps []url.Values
	for _, k := range keys {
		vs = append(vs, logsapi.Viewer{AccountID: k.AccountID, KeyID: k.ID})
		ps = append(ps, url.Values{"scope": {"key"}})
	}
	return vs, ps, nil
}

// with is params plus more.
func with(params url.Values, more url.Values) url.Values {
	out := url.Values{}
	for k, vs := range params {
		out[k] = append([]string(nil), vs...)
	}
	for k, vs := range more {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
