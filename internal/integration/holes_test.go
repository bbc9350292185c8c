package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// Item 10 of issue 22: the smaller holes.

func imagesConfig(url, server string) string {
	return server + `
channel "openai" {
  vendor    = "openai"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  families  = ["image"]
  models    = ["img=gpt-image-1"]
}
model "img" {
  owned_by = "openai"
  family   = "image"
  price {
    per_image = "0.042"
  }
}
`
}

// A reference image that cannot be fetched gets one message, whatever
// the cause: refused by the address policy (the IANA special-purpose
// ranges included), a closed port, an error status. "connection refused"
// against "answered HTTP 404" let a client scan ports through the gateway.
func TestFetchFailuresLookAlike(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	web := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(web.Close)
	strict := testgw.Start(t, testgw.Options{Config: imagesConfig(up.URL, "")})
	open := testgw.Start(t, testgw.Options{Config: imagesConfig(up.URL, "server {\n  allow_private_urls = true\n}\n")})

	refusal := func(g *testgw.Gateway, ref string) string {
		t.Helper()
		acct := g.Account("")
		_, key := g.Key(acct, nil)
		r := do(t, "POST", g.URL+"/v1/images/edits", bearer(key), `{"model":"img","prompt":"p","image":"`+ref+`"}`)
		if r.Status != 400 {
			t.Fatalf("%s: %d %s", ref, r.Status, r.Body)
		}
		return strings.ReplaceAll(gjson.GetBytes(r.Body, "error.message").Str, ref, "URL")
	}
	var msgs []string
	for _, ref := range []string{"http://198.18.0.1/a.png", "http://203.0.113.9/a.png", "http://[64:ff9b::a00:1]/a.png",
		"http://[2002:a00:1::1]/a.png", "http://10.1.2.3/a.png", web.URL + "/a.png"} {
		msgs = append(msgs, refusal(strict, ref))
	}
	for _, ref := range []string{closedURL(t) + "/a.png", web.URL + "/a.png"} {
		msgs = append(msgs, refusal(open, ref))
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Fatalf("two refused fetches read differently:\n%q\n%q", msgs[0], m)
		}
	}
	for _, leak := range []string{"refused", "404", "private", "loopback"} {
		if strings.Contains(msgs[0], leak) {
			t.Fatalf("the message names the cause (%s): %q", leak, msgs[0])
		}
	}
}

// Without public_url, links to hosted files took their base from the
// client's Host header, and were kept where other keys read them: the base
// is the listen address (or the TLS domain), whatever Host says.
func TestLinksIgnoreTheHostHeader(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	g := testgw.Start(t, testgw.Options{Config: imagesConfig(up.URL, "")})
	acct := g.Account("")
	_, key := g.Key(acct, nil)
	req, err := http.NewRequest("POST", g.URL+"/v1/images/generations", strings.NewReader(`{"model":"img","prompt":"a harbour"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "evil.example:9999"
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-Host", "evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	link := gjson.GetBytes(b, "data.0.url").Str
	if resp.StatusCode != 200 || !strings.HasPrefix(link, g.URL+"/files/") {
		t.Fatalf("link %q (status %d, want it on %s): %s", link, resp.StatusCode, g.URL, b)
	}
	download(t, link)
}

// go-plugin's AutoMTLS is on: each plugin process is handed the host's
// client certificate, and its control channel is mutual TLS.
func TestPluginsRunWithAutoMTLS(t *testing.T) {
	t.Parallel()
	g := testgw.Start(t, testgw.Options{})
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pluginPID(t, g, "tollgate-plugin-sim")) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(env), "PLUGIN_CLIENT_CERT=") {
		t.Fatal("the plugin was started without a client certificate (AutoMTLS off)")
	}
}

// master.key can live outside the data directory: a backup of the data
// directory then holds no key that opens the sealed API keys.
func TestMasterKeyFileOutsideTheDataDir(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "secrets", "master.key")
	cfg := "server {\n  master_key_file = \"" + keyFile + "\"\n}\n"
	g := testgw.Start(t, testgw.Options{Config: cfg})
	acct := g.Account("")
	id, raw := g.Key(acct, nil)
	if _, err := os.Stat(filepath.Join(g.DataDir, "master.key")); !os.IsNotExist(err) {
		t.Fatalf("a master key was written into the data directory: %v", err)
	}
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v %v", st, err)
	}
	g.Stop()
	g = testgw.Start(t, testgw.Options{Config: cfg, DataDir: g.DataDir})
	var k struct{ Key string }
	g.Admin("GET", "/keys/"+id+"/reveal", nil, &k)
	if k.Key != raw {
		t.Fatalf("after a restart the key reveals %q, want %q", k.Key, raw)
	}
}
