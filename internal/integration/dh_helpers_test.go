package integration

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// dhConfig serves the digital-human and editing families through the sim
// at prices the tests own (dhPrices), with the private-address policy on
// (a link to a private address is refused), and a model's shorter limits
// so the subtitle timeouts run in seconds: clip-subtitle's synchronous
// wait 2 s (the spec's 240 s) and its task 3 s (25 minutes).
const dhConfig = `
server {
  sweep_every = "300ms"
}
store "badger" {
  dir = "@DATA@"
}
channel "sim" {
  vendor   = "sim"
  base_url = "sim://local"
  families = ["avatar", "lipsync", "motion", "clip", "subtitle", "voice", "video"]
  models   = ["dh-avatar", "dh-avatar-create", "dh-lipsync", "dh-lipsync-pro", "dh-lipsync-max", "dh-motion", "dh-motion-flat",
              "dh-motion-two", "clip-compose", "clip-subtitle", "voice", "vid"]
}
model "dh-avatar" {
  family = "avatar"
  price {
    per_second = "0.31"
  }
}
model "dh-avatar-create" {
  family = "avatar"
  price {
    per_call = "2.17"
  }
}
model "dh-lipsync" {
  family = "lipsync"
  price {
    per_second = "0.11"
  }
}
model "dh-lipsync-pro" {
  family = "lipsync"
  price {
    per_second = "0.23"
  }
}
model "dh-lipsync-max" {
  family = "lipsync"
  price {
    per_second = "0.37"
  }
}
model "dh-lipsync-nochan" {
  family = "lipsync"
  price {
    per_second = "0.5"
  }
}
model "dh-motion" {
  family = "motion"
  price {
    per_second_by_resolution = { fast = "0.05", standard = "0.13", max = "0.29" }
  }
}
model "dh-motion-flat" {
  family = "motion"
  price {
    per_second = "0.07"
  }
}
model "dh-motion-two" {
  family = "motion"
  price {
    per_second_by_resolution = { fast = "0.02", standard = "0.03" }
  }
}
model "clip-compose" {
  family = "clip"
  price {
    per_call = "0.9"
  }
}
model "clip-subtitle" {
  family       = "subtitle"
  call_timeout = "2s"
  max_runtime  = "3s"
  price {
    per_call = "0.013"
  }
}
model "voice" {
  family = "voice"
  price {
    per_call = "0.41"
  }
}
model "vid" {
  family       = "video"
  max_duration = 8
  price {
    per_second = "0.07"
  }
}
`

// dhRefusingChannel adds a channel above sim that refuses every
// dh-avatar call: only a call pinned to sim (by an avatar registered
// there) passes it by.
func dhRefusingChannel(cfg string) string {
	return strings.Replace(cfg, `model "dh-avatar" {`, `channel "sim-refusing" {
  vendor   = "sim"
  base_url = "sim://refusing"
  families = ["avatar"]
  models   = ["dh-avatar"]
  priority = 10
  settings = { fault = "error=400" }
}
model "dh-avatar" {`, 1)
}

// dhPrices are dhConfig's unit prices, by model (and tier).
var dhPrices = map[string]string{
	"dh-avatar": "0.31", "dh-avatar-create": "2.17", "dh-lipsync": "0.11", "dh-lipsync-pro": "0.23", "dh-lipsync-max": "0.37",
	"dh-motion/fast": "0.05", "dh-motion/standard": "0.13", "dh-motion/max": "0.29", "dh-motion-flat": "0.07",
	"clip-compose": "0.9", "clip-subtitle": "0.013", "voice": "0.41", "vid": "0.07",
}

// dhCost is units at a price of dhPrices.
func dhCost(t *testing.T, price string, units int64) money.Nano {
	t.Helper()
	return pricedIn(t, dhPrices, price, units)
}

// startDH starts a gateway on dhConfig (edit rewrites it) with an account
// holding 50 credits.
func startDH(t *testing.T, edit func(string) string) *mediaEnv {
	t.Helper()
	cfg := dhConfig
	if edit != nil {
		cfg = edit(cfg)
	}
	return startMedia(t, testgw.Options{Config: cfg})
}

// wantRefused checks a refusal that charged nothing: its error, and a
// wallet that neither holds nor lost anything since spent.
func (e *mediaEnv) wantRefused(t *testing.T, c call, status int, code, inMessage string, spent money.Nano) {
	t.Helper()
	wantError(t, c, status, code, inMessage)
	if got := e.settled(t); got != spent {
		t.Fatalf("charged %s after a refusal, want %s", got, spent)
	}
}

// fields lists an object's member names, sorted, as one string.
func fields(m map[string]any) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ",")
}
