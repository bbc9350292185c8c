package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: no file an operator writes panics the loader; what it
// accepts validates (every channel's models are declared, every model
// has its family) and renders.
func FuzzParse(f *testing.F) {
	if src, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "tollgate.hcl")); err == nil {
		f.Add(string(src))
	}
	for _, s := range []string{
		``, `server {}`, `server { listen = "127.0.0.1:0" max_body = "1MB" }`,
		"channel \"a\" {\n vendor = \"sim\"\n base_url = \"sim://x\"\n models = [\"m\"]\n}\nmodel \"m\" {\n price {\n input = \"1\"\n output = \"2\"\n }\n}\n",
		`model "m" { family = "video" max_duration = 5 price { per_second = "0.001" } }`,
		`server { admin_listen = env("X") }`, `store "badger" { dir = "${env("HOME")}" }`,
		`limits { rpm = -1 concurrency = 1e40 }`, `model "m" { price { input = "1e-99" } }`, `a = {`,
	} {
		f.Add(s)
	}
	lookup := func(k string) (string, bool) { return "v-" + k, k != "UNSET" }
	f.Fuzz(func(t *testing.T, src string) {
		cfg, err := parse([]byte(src), "fuzz.hcl", lookup)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("an empty error for %q", src)
			}
			return
		}
		if cfg == nil {
			t.Fatalf("no config and no error for %q", src)
		}
		_ = cfg.PluginNames()
	})
}
