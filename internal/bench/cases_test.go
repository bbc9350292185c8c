package bench

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tollgate-gw/tollgate/core/config"
)

// The config the harness writes must load with the gateway's own loader.
func TestConfigLoads(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		dataDir string
	}{
		{desc: "plain dir", dataDir: "/tmp/tollgate-bench-1/data"},
		{desc: "dir with quote, backslash and template marks", dataDir: `/tmp/a "b"\c/${x}/%{y}/$z`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.Parse([]byte(Config("http://127.0.0.1:4567", "up-key", tc.dataDir)), "bench.hcl")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Store.Dir != tc.dataDir {
				t.Fatalf("store dir %q, want %q", cfg.Store.Dir, tc.dataDir)
			}
			m, ok := cfg.Model(Model)
			if !ok || len(m.TranslateFrom) != 1 || m.TranslateFrom[0] != "anthropic_messages" {
				t.Fatalf("model %+v, found %v", m, ok)
			}
			chs := cfg.ChannelsFor(Model)
			if len(chs) != 1 || chs[0].Vendor != "openai" || chs[0].BaseURL != "http://127.0.0.1:4567" || chs[0].APIKey != "up-key" {
				t.Fatalf("channels %+v", chs)
			}
		})
	}
}

func TestCases(t *testing.T) {
	t.Parallel()
	cases := Cases("http://up", "http://gw", "up-key", "sk-tollgate-x")
	names := map[string]bool{}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			names[c.Name] = true
			for _, r := range []Request{c.Direct, c.Gateway} {
				var body struct {
					Model  string `json:"model"`
					Stream bool   `json:"stream"`
				}
				if err := json.Unmarshal(r.Body, &body); err != nil {
					t.Fatalf("%s body: %v", r.URL, err)
				}
				if body.Model != Model || body.Stream != c.Streaming || r.Stream != c.Streaming || len(r.Expect) == 0 {
					t.Fatalf("%s: model %q stream %v/%v expect %q", r.URL, body.Model, body.Stream, r.Stream, r.Expect)
				}
			}
			if got := c.Direct.Header.Get("Authorization"); got != "Bearer up-key" {
				t.Fatalf("direct auth %q", got)
			}
			if c.Gateway.Header.Get("Authorization") != "Bearer sk-tollgate-x" && c.Gateway.Header.Get("X-Api-Key") != "sk-tollgate-x" {
				t.Fatalf("gateway auth missing: %v", c.Gateway.Header)
			}
			if c.Streaming && !bytes.Contains(c.Gateway.Body, []byte("[sim:chunks=20]")) {
				t.Fatal("stream case does not ask for 20 chunks")
			}
		})
	}
	for _, want := range []string{"completions", "stream-20", "messages-translated", "messages-stream-translated"} {
		if !names[want] {
			t.Errorf("case %s missing", want)
		}
	}
}

func TestSelectCases(t *testing.T) {
	t.Parallel()
	all := Cases("http://up", "http://gw", "k", "k")
	tests := []struct {
		desc string
		only []string
		want int
	}{
		{desc: "all", only: nil, want: len(all)},
		{desc: "one", only: []string{"stream-20"}, want: 1},
		{desc: "unknown", only: []string{"nope"}, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			if got := selectCases(all, tc.only); len(got) != tc.want {
				t.Fatalf("%d cases, want %d", len(got), tc.want)
			}
		})
	}
}

func TestHelpers(t *testing.T) {
	t.Parallel()
	t.Run("listen line", func(t *testing.T) {
		addr, ok := listenLine("Tollgate listening on http://127.0.0.1:41234")
		if !ok || addr != "http://127.0.0.1:41234" {
			t.Fatalf("%q %v", addr, ok)
		}
		if _, ok := listenLine("admin token written to /x"); ok {
			t.Fatal("matched another line")
		}
	})
	t.Run("cpu model", func(t *testing.T) {
		info := "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nflags\t: fpu\n"
		if got := CPUModel([]byte(info)); got != "Intel(R) Xeon(R) CPU @ 2.20GHz" {
			t.Fatal(got)
		}
		if got := CPUModel([]byte("processor : 0\n")); got != "" {
			t.Fatal(got)
		}
	})
}
