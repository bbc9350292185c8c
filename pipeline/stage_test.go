package pipeline

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/money"
)

type namedStage string

func (n namedStage) Name() string                       { return string(n) }
func (n namedStage) Serve(context.Context, *Call) error { return nil }

func TestBuildOrder(t *testing.T) {
	reg := NewRegistry()
	reg.Register("guard", func(*Deps, map[string]string) (Stage, error) { return namedStage("guard"), nil })
	d := &Deps{Config: &config.Config{}, Logger: hclog.NewNullLogger()}
	cases := []struct {
		desc  string
		order []string
		err   string
	}{
		{"default order", nil, ""},
		{"extra stage", []string{"auth", "agent", "guard", "allowlist", "idempotency", "precharge", "translate", "dispatch", "settle", "log"}, ""},
		{"agent left out: put after auth", []string{"auth", "guard", "allowlist", "idempotency", "precharge", "translate", "dispatch", "settle", "log"}, ""},
		{"agent not right after auth", []string{"auth", "guard", "agent", "allowlist", "idempotency", "precharge", "translate", "dispatch", "settle", "log"}, `"agent" must come right after "auth"`},
		{"agent before auth", []string{"agent", "auth", "allowlist", "idempotency", "precharge", "translate", "dispatch", "settle", "log"}, `"agent" must come right after "auth"`},
		{"unknown stage", []string{"auth", "nope"}, `unknown stage "nope"`},
		{"missing required", []string{"auth", "allowlist", "idempotency", "precharge", "translate", "dispatch", "settle"}, `stage "log" is required`},
		{"idempotency left out", []string{"auth", "allowlist", "precharge", "translate", "dispatch", "settle", "log"}, `stage "idempotency" is required`},
		{"idempotency after precharge", []string{"auth", "allowlist", "precharge", "idempotency", "translate", "dispatch", "settle", "log"}, `"idempotency" must come before "precharge"`},
		{"out of order", []string{"allowlist", "auth", "idempotency", "precharge", "translate", "dispatch", "settle", "log"}, `"auth" must come before "allowlist"`},
		{"twice", []string{"auth", "auth"}, `named twice`},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			ch, err := Build(reg, d, tc.order, nil)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				want := tc.order
				if want == nil {
					want = DefaultOrder
				}
				if !slices.Contains(want, "agent") {
					want = slices.Insert(slices.Clone(want), 1, "agent")
				}
				if strings.Join(ch.Stages(), ",") != strings.Join(want, ",") {
					t.Fatalf("stages %v", ch.Stages())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
}

func TestValidIdempotencyKey(t *testing.T) {
	for _, tc := range []struct {
		k  string
		ok bool
	}{
		{"abc-123", true}, {strings.Repeat("a", 200), true}, {"", false},
		{strings.Repeat("a", 201), false}, {"has space", false}, {"tab\there", false}, {"é", false},
	} {
		if got := ValidIdempotencyKey(tc.k); got != tc.ok {
			t.Errorf("%q: %v", tc.k, got)
		}
	}
}

func TestTokenCost(t *testing.T) {
	p := config.Price{}
	p.Input, p.Output, p.CachedInput = 1_000_000_000, 2_000_000_000, 500_000_000 // 1, 2 and 0.5 per million
	// 1000 input of which 400 cached, 100 output: 600*1 + 400*0.5 + 100*2 per million.
	if got, ok := TokenCost(p, 1000, 400, 0, 100); !ok || got.String() != "0.001" {
		t.Fatalf("got %s", got)
	}
	// Cache writes at input price when cache_write is unset.
	if got, ok := TokenCost(p, 1000, 0, 1000, 0); !ok || got.String() != "0.001" {
		t.Fatalf("got %s", got)
	}
	// A cost beyond the largest amount is reported and clamped, never wrapped:
	// each part fits, their sum does not.
	p.Input, p.Output = money.Max/1000, money.Max/1000
	if got, ok := TokenCost(p, 1_000_000_000, 0, 0, 1_000_000_000); ok || got != money.Max {
		t.Fatalf("got %s, %v", got, ok)
	}
	if got, ok := TokenCost(p, 1<<62, 0, 0, 0); ok || got != money.Max {
		t.Fatalf("got %s, %v", got, ok)
	}
}
