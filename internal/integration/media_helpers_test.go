package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// mediaConfig serves every media family through the sim, at prices the
// tests own (mediaPrices), with a second sim channel for speech and voices
// and a failing one above both (references pin a call to the channel that
// holds them: a speech with a cloned voice never tries sim-down).
const mediaConfig = `
server {
  allow_private_urls = true
  sweep_every        = "500ms"
}
store "badger" {
  dir = "@DATA@"
}
channel "sim" {
  vendor    = "sim"
  base_url  = "sim://local"
  families  = ["chat", "image", "video", "music", "speech", "voice", "transcript", "search"]
  protocols = ["openai_chat"]
  models    = ["sim-chat", "img", "vid", "vid-tiered", "vid-short", "vid-quick", "mus", "tts", "voice", "trn", "srch"]
}
channel "sim-b" {
  vendor   = "sim"
  base_url = "sim://b"
  families = ["speech", "voice"]
  models   = ["tts", "voice"]
}
channel "sim-down" {
  vendor   = "sim"
  base_url = "sim://down"
  families = ["speech"]
  models   = ["tts"]
  priority = 10
  settings = { fault = "error=500" }
}
model "sim-chat" {
  owned_by = "sim"
  price {
    input  = "1"
    output = "2"
  }
}
model "img" {
  family = "image"
  price {
    per_image = "0.04"
  }
}
model "vid" {
  family       = "video"
  max_duration = 8
  settings     = { min_duration = "1", modes = "text-to-video,image-to-video", ratios = "16:9,9:16", max_refs = "2", audio = "true" }
  price {
    per_second = "0.07"
  }
}
model "vid-tiered" {
  family       = "video"
  max_duration = 10
  settings     = { resolutions = "480p,720p", resolution_with_video = "true" }
  price {
    per_second_by_resolution = { "480p" = "0.03", "720p" = "0.11" }
  }
}
model "vid-short" {
  family       = "video"
  max_duration = 6
  retention    = "2s"
  price {
    per_second = "0.05"
  }
}
model "vid-quick" {
  family       = "video"
  max_duration = 5
  max_runtime  = "2s"
  price {
    per_second = "0.01"
  }
}
model "mus" {
  family = "music"
  price {
    per_generation = "0.37"
  }
}
model "tts" {
  family = "speech"
  price {
    per_character = "0.0003"
  }
}
model "voice" {
  family = "voice"
  price {
    per_call = "0.41"
  }
}
model "trn" {
  family = "transcript"
  price {
    per_call = "0.023"
  }
}
model "srch" {
  family = "search"
  price {
    per_call = "0.0061"
  }
}
`

// mediaPrices are the unit prices of mediaConfig, by model (and tier).
var mediaPrices = map[string]string{
	"img": "0.04", "vid": "0.07", "vid-tiered/480p": "0.03", "vid-tiered/720p": "0.11", "vid-short": "0.05",
	"vid-quick": "0.01", "mus": "0.37", "tts": "0.0003", "voice": "0.41", "trn": "0.023", "srch": "0.0061",
	// the real vendors' models (media_vendors_test.go)
	"oai-tts": "0.000015", "sora": "0.1", "suno-music": "0.12", "eleven-clone": "0.5", "eleven-tts": "0.00003",
	"tavily-search": "0.008",
	// the embedded default's sim models
	"sim-image": "0.04", "sim-video": "0.05", "sim-music": "0.20", "sim-speech": "0.000015",
}

type mediaEnv struct {
	g      *testgw.Gateway
	acct   string
	key    string
	credit string
}

func startMedia(t *testing.T, o testgw.Options) *mediaEnv {
	t.Helper()
	if o.Config == "" {
		o.Config = mediaConfig
	}
	g := testgw.Start(t, o)
	return newMediaAccount(t, g, "50")
}

func newMediaAccount(t *testing.T, g *testgw.Gateway, credit string) *mediaEnv {
	t.Helper()
	acct := g.Account(credit)
	_, key := g.Key(acct, nil)
	return &mediaEnv{g: g, acct: acct, key: key, credit: credit}
}

func (e *mediaEnv) post(t *testing.T, path, body string, headers ...string) call {
	t.Helper()
	h := bearer(e.key)
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	return do(t, "POST", e.g.URL+path, h, body)
}

func (e *mediaEnv) get(t *testing.T, path string) call {
	t.Helper()
	return do(t, "GET", e.g.URL+path, bearer(e.key), "")
}

// poll polls a task until its status is no longer one of running, and
// returns its last answer.
func (e *mediaEnv) poll(t *testing.T, path string, running ...string) call {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c := e.get(t, path)
		st, _ := c.json(t)["status"].(string)
		if c.Status != 200 || !containsStr(running, st) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still %s after 20s: %s", path, st, c.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// settled waits until the account holds nothing and returns what it was
// charged: its credit less its balance.
func (e *mediaEnv) settled(t *testing.T) money.Nano {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		bal, held := e.g.Balance(e.acct)
		if held == "0" {
			return money.MustParse(e.credit) - money.MustParse(bal)
		}
		if time.Now().After(deadline) {
			t.Fatalf("account %s still holds %s", e.acct, held)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// held is what the account holds now.
func (e *mediaEnv) held(t *testing.T) money.Nano {
	t.Helper()
	_, held := e.g.Balance(e.acct)
	return money.MustParse(held)
}

// rowOf is the log row of a request id or task id (waiting for it).
func (e *mediaEnv) rowOf(t *testing.T, ref string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := e.get(t, "/v1/logs?period=all&ref="+ref)
		var p logsPage
		if err := json.Unmarshal(c.Body, &p); c.Status == 200 && err == nil && len(p.Data) == 1 {
			return p.Data[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no single row for %s: %d %s", ref, c.Status, c.Body)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// priced is units at a model's (or tier's) price in mediaPrices.
func priced(t *testing.T, price string, units int64) money.Nano {
	t.Helper()
	return pricedIn(t, mediaPrices, price, units)
}

// pricedIn is units at a price of a test's price table.
func pricedIn(t *testing.T, table map[string]string, price string, units int64) money.Nano {
	t.Helper()
	p, ok := table[price]
	if !ok {
		t.Fatalf("no price %q", price)
	}
	return money.Times(units, money.MustParse(p))
}

// wantRow checks a row's status, unit type and count and its cost.
func wantRow(t *testing.T, row map[string]any, status, unitType string, units int64, cost money.Nano) {
	t.Helper()
	got := money.MustParse(str(row["cost"]))
	if row["status"] != status || row["unit_type"] != unitType || int64(num(row["unit_count"])) != units || got != cost {
		t.Fatalf("row %v: want status %s, unit_type %s, unit_count %d, cost %s", row, status, unitType, units, cost)
	}
}

// wantError checks a completions-style error.
func wantError(t *testing.T, c call, status int, code, inMessage string) {
	t.Helper()
	if c.Status != status {
		t.Fatalf("status %d, want %d: %s", c.Status, status, c.Body)
	}
	got, _, msg := c.errorOf(t)
	if got != code || !strings.Contains(msg, inMessage) {
		t.Fatalf("error %s %q, want %s with %q", got, msg, code, inMessage)
	}
}

// testgwOptions start a gateway on mediaConfig.
func testgwOptions() testgw.Options { return testgw.Options{} }
