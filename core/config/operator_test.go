package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
)

// Money fails closed: a model is priced or says free = true.
func TestPriceRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		src  string
		want string
	}{
		{
			desc: "no price block",
			src:  "model \"gpt-4o-mini\" {\n  owned_by = \"openai\"\n}",
			want: `t.hcl:1,1-20: model "gpt-4o-mini": no price {} block; every model needs a price (chat: per million tokens, e.g. price { input = "0.15" output = "0.60" }), or free = true to serve it at no charge on purpose`,
		},
		{
			desc: "empty price block",
			src:  "model \"m\" {\n  price {}\n}",
			want: `t.hcl:2,3-8: model "m" price: sets no price (every field is 0); set the model's prices, or write free = true on the model to serve it at no charge on purpose`,
		},
		{
			desc: "every price zero",
			src:  "model \"m\" {\n  price {\n    input  = \"0\"\n    output = \"0.000\"\n  }\n}",
			want: `t.hcl:2,3-8: model "m" price: sets no price (every field is 0); set the model's prices, or write free = true on the model to serve it at no charge on purpose`,
		},
		{
			desc: "chat model priced per image only",
			src:  "model \"m\" {\n  price { per_image = \"0.04\" }\n}",
			want: `t.hcl:2,3-8: model "m" price: a chat model is billed per token, but neither input nor output is priced; set them, or write free = true on the model`,
		},
		{
			desc: "free and a price",
			src:  "model \"m\" {\n  free = true\n  price { input = \"1\" }\n}",
			want: `t.hcl:2,10-14: model "m": free = true and a non-zero price {} contradict each other; keep one`,
		},
		{
			desc: "free not a bool",
			src:  "model \"m\" {\n  free = \"yes\"\n}",
			want: `t.hcl:1,1-10: model "m": no price {} block; every model needs a price (chat: per million tokens, e.g. price { input = "0.15" output = "0.60" }), or free = true to serve it at no charge on purpose` + "\n" +
				`t.hcl:2,10-15: model "m": free: want true or false, got string`,
		},
		{
			desc: "negative signup credit",
			src:  `accounts { signup_credit = "-1" }`,
			want: `t.hcl:1,28-32: accounts: signup_credit: "-1" must not be negative ("0" gives new accounts no credit)`,
		},
		{
			desc: "signup credit as a number",
			src:  `accounts { signup_credit = 121.32 }`,
			want: `t.hcl:1,28-34: accounts: signup_credit: write an amount as a decimal string, e.g. signup_credit = "121.32" (got number; numbers are not exact)`,
		},
		{
			desc: "signup credit not a decimal",
			src:  `accounts { signup_credit = "lots" }`,
			want: `t.hcl:1,28-34: accounts: signup_credit: invalid amount "lots"`,
		},
		{
			desc: "signup neither a bool nor invite",
			src:  `accounts { signup = "yes" }`,
			want: `t.hcl:1,21-26: accounts: signup: want true (anyone may sign up), false (only the operator adds people) or "invite" (only with an invitation); got "yes"`,
		},
		{
			desc: "console listen not host:port",
			src:  `console { listen = "8081" }`,
			want: `t.hcl:1,20-26: console: listen: "8081" is not host:port (address 8081: missing port in address)`,
		},
		{
			desc: "console session too short",
			src:  `console { session_ttl = "5s" }`,
			want: `t.hcl:1,25-29: console: session_ttl: 5s is too short for a person to use the console; give at least "1m" (default "168h")`,
		},
		{
			desc: "two console blocks",
			src:  "console {}\nconsole {}",
			want: `t.hcl:2,1-8: duplicate console block (the first is at t.hcl:1)`,
		},
		{
			desc: "two accounts blocks",
			src:  "accounts {}\naccounts {}",
			want: `t.hcl:2,1-9: duplicate accounts block (the first is at t.hcl:1)`,
		},
		{
			desc: "enabled not a bool",
			src:  "channel \"c\" {\n  vendor    = \"sim\"\n  protocols = [\"openai_chat\"]\n  enabled   = \"no\"\n}",
			want: `t.hcl:4,15-19: channel "c": enabled: want true or false, got string`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			_, err := parseTest(t, tc.src)
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *config.Error", err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestPricedAndFree(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
model "paid" {
  price { output = "2" }
}
model "image" {
  family = "image"
  price { per_image = "0.04" }
}
model "gift" {
  free = true
  price {}
}
accounts {
  signup_credit = "0"
}`)
	want := map[string]bool{"paid": false, "image": false, "gift": true}
	for id, free := range want {
		m, ok := cfg.Model(id)
		if !ok || m.Free != free {
			t.Errorf("model %q: %+v", id, m)
		}
	}
	if cfg.Accounts.SignupCredit != 0 {
		t.Errorf("signup credit %v, want 0", cfg.Accounts.SignupCredit)
	}
	if def := mustParse(t, ``); def.Accounts.SignupCredit != money.MustParse("121.32") {
		t.Errorf("default signup credit %v, want the spec's 121.32", def.Accounts.SignupCredit)
	}
	if d := Default(func(string) string { return "" }); d.Accounts.SignupCredit != DefaultSignupCredit {
		t.Errorf("embedded default signup credit %v", d.Accounts.SignupCredit)
	}
}

// The console is off in a file without its block, on with one; sign-up
// is closed unless the file opens it.
func TestConsoleAndSignup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc    string
		src     string
		console Console
		signup  string
	}{
		{"no blocks", ``, Console{SessionTTL: DefaultSessionTTL}, SignupClosed},
		{"an empty console block", `console {}`, Console{Enabled: true, SessionTTL: DefaultSessionTTL}, SignupClosed},
		{"turned off", `console { enabled = false }`, Console{SessionTTL: DefaultSessionTTL}, SignupClosed},
		{"its own listener", `console {
  listen      = "127.0.0.1:8081"
  session_ttl = "12h"
}
accounts { signup = true }`, Console{Enabled: true, Listen: "127.0.0.1:8081", SessionTTL: 12 * time.Hour}, SignupOpen},
		{"invitations", `accounts { signup = "invite" }`, Console{SessionTTL: DefaultSessionTTL}, SignupInvite},
		{"closed", `accounts { signup = false }`, Console{SessionTTL: DefaultSessionTTL}, SignupClosed},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cfg := mustParse(t, tc.src)
			if cfg.Console != tc.console || cfg.Accounts.Signup != tc.signup {
				t.Errorf("console %+v, signup %q; want %+v, %q", cfg.Console, cfg.Accounts.Signup, tc.console, tc.signup)
			}
		})
	}
	d := Default(func(string) string { return "" })
	if !d.Console.Enabled || d.Console.Listen != "" || d.Accounts.Signup != SignupOpen {
		t.Errorf("the embedded default: console %+v, signup %q; want the console on the main listener, sign-up open", d.Console, d.Accounts.Signup)
	}
}

// A disabled channel is checked, then left out: no plugin, no route.
func TestDisabledChannel(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
model "m" {
  price {
    input  = "1"
    output = "2"
  }
}
channel "sim" {
  vendor    = "sim"
  protocols = ["openai_chat"]
  models    = ["m"]
}
channel "openai" {
  vendor    = "openai"
  api_key   = env("TG_EMPTY")
  enabled   = env("TG_EMPTY") != ""
  protocols = ["openai_chat"]
  models    = ["m"]
}`)
	if len(cfg.Channels) != 1 || cfg.Channels[0].Name != "sim" || !reflect.DeepEqual(cfg.Disabled, []string{"openai"}) {
		t.Fatalf("channels %+v disabled %v", cfg.Channels, cfg.Disabled)
	}
	if got := cfg.PluginNames(); !reflect.DeepEqual(got, []string{"sim"}) {
		t.Errorf("PluginNames = %v", got)
	}
	if len(cfg.Warnings()) != 0 {
		t.Errorf("warnings %v", cfg.Warnings())
	}
	// A disabled channel is still checked.
	_, err := parseTest(t, "model \"m\" {\n  free = true\n}\nchannel \"c\" {\n  vendor  = \"openai\"\n  enabled = false\n  models  = [\"nope\"]\n}")
	if err == nil || !strings.Contains(err.Error(), `t.hcl:7,14-20: channel "c": models: "nope" is not a declared model`) {
		t.Errorf("err = %v", err)
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
server { admin_token = "secret" }
plugin "opnai" {}
model "m" {
  price {
    input  = "1"
    output = "2"
  }
}
model "lonely" {
  free = true
}
model "input-only" {
  price { input = "1" }
}
model "swapped" {
  price {
    input        = "0.1"
    output       = "1"
    cached_input = "1"
  }
}
channel "c" {
  vendor    = "openai"
  protocols = ["openai_chat"]
  models    = ["m", "input-only", "swapped"]
}
channel "idle" {
  vendor    = "sim"
  protocols = ["openai_chat"]
}
channel "plain" {
  vendor    = "openai-compatible"
  base_url  = "http://llm.example.com:8000"
  api_key   = "k"
  protocols = ["openai_chat"]
  models    = ["m"]
}
channel "local" {
  vendor    = "openai-compatible"
  base_url  = "http://10.0.0.5:8000"
  api_key   = "k"
  protocols = ["openai_chat"]
  models    = ["m"]
}`)
	want := []string{
		`t.hcl:2,24-32: server: admin_token is 6 characters; whoever guesses it controls every account and key: use 32 or more random characters (or leave it out and one is generated)`,
		`t.hcl:3,1-15: plugin "opnai": no enabled channel has vendor = "opnai", so this block is unused (did you mean "openai"?)`,
		`t.hcl:10,1-15: model "lonely": no enabled channel serves it; calls to it get 503 no_channel_available`,
		`t.hcl:14,3-8: model "input-only": price: output is not priced, so generated tokens are free; set output (per million tokens)`,
		`t.hcl:17,3-8: model "swapped": price: cached_input (1) is above input (0.1): cached tokens would cost more than fresh ones; are the two swapped?`,
		`t.hcl:28,1-15: channel "idle": lists no models, so it serves nothing (add models = [...])`,
		`t.hcl:34,15-44: channel "plain": base_url: plain http to llm.example.com:8000: the api_key crosses the network unencrypted; use https`,
	}
	if got := cfg.Warnings(); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Refuse reports a problem found after loading where it was written.
func TestRefuse(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
model "m" {
  price { input = "1" }
}
channel "openai-main" {
  vendor    = "openai"
  api_key   = env("TG_EMPTY")
  protocols = ["openai_chat"]
  models    = ["m"]
}`)
	tests := []struct {
		desc string
		ref  Ref
		msg  string
		want string
	}{
		{
			desc: "at the attribute", ref: Ref{Kind: "channel", Name: "openai-main", Attr: "api_key"}, msg: "api_key is empty",
			want: `t.hcl:7,15-30: channel "openai-main": api_key is empty`,
		},
		{
			desc: "attribute named once", ref: Ref{Kind: "channel", Name: "openai-main", Attr: "vendor"}, msg: `no plugin "openai"`,
			want: `t.hcl:6,15-23: channel "openai-main": vendor: no plugin "openai"`,
		},
		{
			desc: "attribute not written: the block", ref: Ref{Kind: "channel", Name: "openai-main", Attr: "base_url"}, msg: "base_url is empty",
			want: `t.hcl:5,1-22: channel "openai-main": base_url is empty`,
		},
		{
			desc: "block not written: the file", ref: Ref{Kind: "pipeline", Attr: "stages"}, msg: `unknown stage "x"`,
			want: `t.hcl: pipeline: stages: unknown stage "x"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			if got := cfg.Refuse(tc.ref, "%s", tc.msg).Error(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	def := Default(func(string) string { return "" })
	if got := def.Refuse(Ref{Kind: "channel", Name: "sim"}, "broken").Error(); got != `embedded default: channel "sim": broken` {
		t.Errorf("embedded default: %s", got)
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	vendors := []string{"anthropic", "gemini", "openai", "openai-compatible", "sim"}
	for name, want := range map[string]string{
		"opnai": "openai", "OpenAI": "openai", "antropic": "anthropic", "gemeni": "gemini",
		"openai-compatable": "openai-compatible", "sim": "", "mistral": "", "x": "", "opneai": "openai",
	} {
		if got := Suggest(name, vendors); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", name, got, want)
		}
	}
}

// Nearest gives the few near ids, closest first, and does not compare a
// name too long to be a typo (a client may send megabytes as a model).
func TestNearest(t *testing.T) {
	t.Parallel()
	ids := []string{"sim-chat", "sim-image", "sim-image-grid", "gpt-4o-mini", "sim-chat"}
	for _, tc := range []struct {
		desc, name string
		want       []string
	}{
		{"closest first", "sim-image-gr", []string{"sim-image-grid", "sim-image"}},
		{"each once", "sim-chta", []string{"sim-chat"}},
		{"none near", "claude-9", []string{}},
		{"too long to compare", strings.Repeat("sim-chat", 100), nil},
	} {
		if got := Nearest(tc.name, ids, 3); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Nearest(%.20q) = %q, want %q", tc.desc, tc.name, got, tc.want)
		}
	}
}

func TestMasked(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
server {
  admin_token = "admin-secret"
}
store "postgres" {
  url = "postgres://tollgate:db-secret@db:5432/tollgate?sslmode=disable"
}
plugin "openai" {
  settings = { org = "o-1", api_token = "t0ken" }
}
model "m" {
  price { input = "1" }
}
channel "c" {
  vendor    = "openai"
  api_key   = env("TG_KEY")
  protocols = ["openai_chat"]
  models    = ["m"]
  settings  = { client_secret = "abc", region = "eu" }
}`)
	out := Render(Masked(cfg))
	for _, secret := range []string{"admin-secret", "sk-upstream", "t0ken", `"abc"`, "db-secret"} {
		if strings.Contains(out, secret) {
			t.Errorf("masked config shows %s:\n%s", secret, out)
		}
	}
	for _, kept := range []string{`admin_token = "<secret, 12 characters>"`, `api_key   = "<secret, 11 characters>"`, `"o-1"`, `"eu"`, "postgres://tollgate:xxxxx@db:5432/tollgate"} {
		if !strings.Contains(out, kept) {
			t.Errorf("masked config lacks %s:\n%s", kept, out)
		}
	}
	if cfg.Channels[0].APIKey != "sk-upstream" {
		t.Error("Masked changed the original")
	}
}

// Every config shipped in docs/ and examples/ (files, and ```hcl blocks in
// the Markdown) loads with no vendor key set, so none can rot.
func TestDocsConfigsLoad(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	noEnv := func(k string) (string, bool) {
		if k == "TOLLGATE_ADMIN_TOKEN" || strings.HasSuffix(k, "_API_KEY") {
			return "", false
		}
		if k == "DATABASE_URL" { // the postgres examples
			return "postgres://tollgate@db.example:5432/tollgate", true
		}
		if strings.HasPrefix(k, "STRIPE_") { // the billing examples
			return "stripe-docs-value", true
		}
		return os.LookupEnv(k)
	}
	fence := regexp.MustCompile("(?s)```hcl\n(.*?)```")
	n := 0
	for _, dir := range []string{"docs", "examples", "."} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && path != filepath.Join(root, dir) && (dir == "." || strings.HasPrefix(e.Name(), ".")) {
				return filepath.SkipDir
			}
			switch {
			case strings.HasSuffix(path, ".hcl"):
				src, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				n++
				if _, err := parse(src, path, noEnv); err != nil {
					t.Errorf("%s does not load:\n%v", path, err)
				}
			case strings.HasSuffix(path, ".md"):
				src, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				for i, m := range fence.FindAllSubmatch(src, -1) {
					n++
					name := path + "#hcl" + string(rune('1'+i))
					if _, err := parse(m[1], name, noEnv); err != nil {
						t.Errorf("%s does not load:\n%v", name, err)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 4 {
		t.Errorf("found %d configs in docs/ and examples/; the walk is broken", n)
	}
}
