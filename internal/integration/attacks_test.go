package integration

import (
	"bytes"
	"context"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/testpg"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// clientURL is one place a client can hand the gateway a URL for a
// plugin or its upstream to fetch: every link field of every family route
// (the spec's media, digital-human and editing parts). Each body puts its
// link before the fields checked after it, so its refusal is the link's:
// field is what the refusal names first.
type clientURL struct {
	name, route, body string // body with @URL@ where the URL goes
	field             string // what the refusal names first
}

var clientURLs = []clientURL{
	{"image reference (edit)", "/v1/images/edits", `{"model":"img","prompt":"p","image":"@URL@"}`, "reference image 1"},
	{"image references (list)", "/v1/images/edits", `{"model":"img","prompt":"p","image":["@URL@"]}`, "reference image 1"},
	{"video reference image", "/v1/videos/generations", `{"model":"sora","prompt":"p","duration":4,"content":[{"type":"text","text":"p"},{"type":"image_url","image_url":{"url":"@URL@"}}]}`, "the reference image"},
	{"voice sample (audio)", "/v1/audio/voices", `{"model":"eleven-clone","name":"Ada","audio_url":"@URL@"}`, "audio_url"},
	{"transcript link", "/v1/transcripts/extract", `{"model":"dh-trn","url":"@URL@"}`, "url"},
	{"transcript link in a share text", "/v1/transcripts/extract", `{"model":"dh-trn","url":"watch this @URL@ now"}`, "url"},
	{"avatar source (image)", "/v1/videos/avatars", `{"source_url":"@URL@","name":"Ada"}`, "source_url"},
	{"avatar source (video)", "/v1/videos/avatars", `{"source_url":"@URL@","name":"Ada","source_kind":"video"}`, "source_url"},
	{"avatar video audio", "/v1/videos/generations", `{"model":"dh-avatar","audio_url":"@URL@","avatar":"preset-1","duration":4}`, "audio_url"},
	{"lip sync source video", "/v1/videos/generations", `{"model":"dh-lipsync","source_video_url":"@URL@","audio_url":"https://media.example/a.mp3","duration":4}`, "source_video_url"},
	{"lip sync audio", "/v1/videos/generations", `{"model":"dh-lipsync","audio_url":"@URL@","source_video_url":"https://media.example/a.mp4","duration":4}`, "audio_url"},
	{"motion source video", "/v1/videos/generations", `{"model":"dh-motion","source_video_url":"@URL@","content":[{"type":"image_url","image_url":{"url":"https://media.example/p.png"}}],"face_count":1,"duration":4}`, "source_video_url"},
	{"motion portrait", "/v1/videos/generations", `{"model":"dh-motion","content":[{"type":"image_url","image_url":{"url":"@URL@"}}],"source_video_url":"https://media.example/a.mp4","face_count":1,"duration":4}`, "content[0].image_url.url"},
	{"subtitle recognition video", "/v1/videos/clip-subtitles", `{"video_url":"@URL@"}`, "video_url"},
	{"compose video", "/v1/videos/generations", `{"model":"clip-compose","video_url":"@URL@","asr_id":"asr_x"}`, "video_url"},
	{"compose music", "/v1/videos/generations", `{"model":"clip-compose","music_url":"@URL@","video_url":"https://media.example/a.mp4","asr_id":"asr_x"}`, "music_url"},
	{"compose picture-in-picture media", "/v1/videos/generations", `{"model":"clip-compose","pip_config":[{"media_url":"https://media.example/ok.png","begin_time":0,"end_time":500},{"media_url":"@URL@","begin_time":0,"end_time":1000}],"video_url":"https://media.example/a.mp4","asr_id":"asr_x"}`, "pip_config[1].media_url"},
}

// fetched reports whether a refusal is a fetch's, made by the gateway
// after dialling: it must not say why, or a client could map the network
// behind the gateway with it. A link the rules refuse from its text alone
// (the upstream fetches it) may be named private: that says nothing of
// any network.
func fetched(msg string) bool { return strings.Contains(msg, "could not be fetched") }

// clientURLsConfig adds the digital-human and editing families of
// dhConfig, and a transcript model, to cfg: the sim serves them.
func clientURLsConfig(cfg string) string {
	dh := dhConfig[strings.Index(dhConfig, `channel "sim" {`):]
	dh = strings.Replace(dh, `families = ["avatar",`, `families = ["transcript", "avatar",`, 1)
	dh = strings.Replace(dh, `models   = ["dh-avatar",`, `models   = ["dh-trn", "dh-avatar",`, 1)
	return cfg + dh + `
model "dh-trn" {
  family = "transcript"
  price {
    per_call = "0.02"
  }
}
`
}

// Every URL a client can hand the gateway goes through the private-
// address policy: with private URLs not allowed (the default), a URL on
// loopback, a private range or a name that resolves there is refused with
// the one generic message, the server behind it sees nothing, and the
// call is a clean 400 with its row and no charge.
func TestClientURLsThroughThePrivateAddressPolicy(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	var hits atomic.Int64
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte("\x89PNG\r\n\x1a\n internal"))
	}))
	t.Cleanup(victim.Close)
	cfg := strings.Replace(mediaVendorsConfig(up.URL), "  allow_private_urls = true\n", "", 1)
	cfg += strings.Replace(imagesConfig(up.URL, ""), `channel "openai"`, `channel "openai-images"`, 1)
	g := startGateway(t, testgw.Options{Config: clientURLsConfig(cfg)})
	_, port, _ := strings.Cut(strings.TrimPrefix(victim.URL, "http://"), ":")
	targets := []string{
		victim.URL + "/a.png",
		"http://localhost:" + port + "/a.png", // a name that resolves to loopback
		"http://[::ffff:127.0.0.1]:" + port + "/a.png",
		"http://169.254.169.254/latest/meta-data/",
		"http://10.0.0.1/a.png",
	}
	for _, c := range clientURLs {
		for _, target := range targets {
			t.Run(c.name+"/"+target, func(t *testing.T) {
				t.Parallel()
				w := newWallet(g)
				r := do(t, "POST", g.URL+c.route, bearer(w.key), strings.ReplaceAll(c.body, "@URL@", target))
				if r.Status != 400 || gjson.GetBytes(r.Body, "error.code").Str != "invalid_request" {
					t.Fatalf("%d %s", r.Status, r.Body)
				}
				msg := gjson.GetBytes(r.Body, "error.message").Str
				if !strings.HasPrefix(msg, c.field+" ") {
					t.Errorf("refused, but not for %s: %q", c.field, msg)
				}
				for _, leak := range []string{"refused", "private", "loopback", "internal"} {
					if fetched(msg) && strings.Contains(msg, leak) {
						t.Errorf("the refusal names its cause (%s): %q", leak, msg)
					}
				}
				row := w.last(t, 1)
				if str(row["status"]) == "success" {
					t.Errorf("row %v", row)
				}
				w.settled(t, 1)
			})
		}
	}
	t.Cleanup(func() {
		if n := hits.Load(); n != 0 {
			t.Errorf("the loopback server was reached %d times", n)
		}
	})
}

// The data dir holds no raw key: after keys are created and used (calls,
// logs read), no file under the data dir, the store's included, contains
// a raw API key or the admin token.
func TestDataDirHoldsNoRawKey(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	dir := t.TempDir()
	g := testgw.Start(t, testgw.Options{Config: strings.Replace(keysUsedConfig(up.URL), `channel "openai"`, `store "badger" {
  dir = "@DATA@"
}
channel "openai"`, 1), DataDir: dir})
	needles := secretsOf(useKeys(t, g), testgw.AdminToken)
	g.Stop() // the store flushed and closed
	scanned := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		scanned++
		for _, n := range needles {
			if bytes.Contains(b, n) {
				t.Errorf("%s holds a raw secret (%.16s...)", p, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 5 {
		t.Fatalf("scanned only %d files under %s", scanned, dir)
	}
}

// The database holds no raw key: after keys are created and used on a
// postgres store, no row of any table (each dumped as text, its bytea
// columns in hex) contains a raw API key, the admin token or the master
// key, as text or as hex.
func TestDatabaseHoldsNoRawKey(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, sim.Knobs{})
	db := testpg.Database(t)
	const master = "6b1f0c2e9a7d4e3f8a5b1c0d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f"
	g := testgw.Start(t, testgw.Options{Config: strings.Replace(keysUsedConfig(up.URL), `channel "openai"`, `store "postgres" {
  url = env("DATABASE_URL")
}
channel "openai"`, 1), Env: []string{"DATABASE_URL=" + db, "TOLLGATE_MASTER_KEY=" + master}})
	needles := secretsOf(useKeys(t, g), testgw.AdminToken, master)
	g.Stop()
	for _, n := range needles[:len(needles):len(needles)] {
		needles = append(needles, []byte(hex.EncodeToString(n)))
	}
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) FROM information_schema.tables
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var scanned int
	seen := false // the dump holds what the calls wrote: their model's name
	for _, table := range tables {
		rows, err := conn.Query(t.Context(), `SELECT t::text FROM `+table+` t`)
		if err != nil {
			t.Fatal(err)
		}
		dump, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range dump {
			scanned++
			seen = seen || strings.Contains(r, "scan-chat")
			for _, n := range needles {
				if bytes.Contains(bytes.ToLower([]byte(r)), bytes.ToLower(n)) {
					t.Errorf("a row of %s holds a raw secret (%.16s...)", table, n)
				}
			}
		}
	}
	if len(tables) < 20 || scanned < 30 || !seen {
		t.Fatalf("scanned %d rows of %d tables (the calls' rows seen: %v): %v", scanned, len(tables), seen, tables)
	}
}

// keysUsedConfig is images and chat on the sim upstream at url.
func keysUsedConfig(url string) string { return imagesConfig(url, "") + chatChannel(url) }

// useKeys makes three accounts with a key each and uses every key: a chat
// call, an image, an idempotent chat call, the logs read. It returns the
// raw keys.
func useKeys(t *testing.T, g *testgw.Gateway) []string {
	t.Helper()
	var raws []string
	for i := range 3 {
		acct := g.Account("")
		_, key := g.Key(acct, nil)
		raws = append(raws, key)
		if r := do(t, "POST", g.URL+"/v1/chat/completions", bearer(key), chatBody("scan-chat", "hello", "")); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if r := do(t, "POST", g.URL+"/v1/images/generations", bearer(key), `{"model":"img","prompt":"a harbour"}`); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		h := bearer(key)
		h["Idempotency-Key"] = "scan-" + itoa(i)
		if r := do(t, "POST", g.URL+"/v1/chat/completions", h, chatBody("scan-chat", "again", "")); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		logsOf(t, g, key)
	}
	return raws
}

// secretsOf are the byte strings no store may hold: each raw key, with and
// without its prefix, and the other secrets.
func secretsOf(keys []string, others ...string) [][]byte {
	var out [][]byte
	for _, k := range keys {
		out = append(out, []byte(k), []byte(strings.TrimPrefix(k, "sk-tollgate-")))
	}
	for _, o := range others {
		out = append(out, []byte(o))
	}
	return out
}

// chatChannel is one chat model on the sim upstream.
func chatChannel(url string) string {
	return `
channel "chat" {
  vendor    = "openai"
  base_url  = "` + url + `"
  api_key   = "` + upstreamKey + `"
  protocols = ["openai_chat"]
  models    = ["scan-chat"]
}
model "scan-chat" {
  price {
    input  = "1"
    output = "2"
  }
}
`
}
