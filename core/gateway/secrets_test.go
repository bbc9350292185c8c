package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-gw/tollgate/core/config"
)

// Every plugin receives only its own channels' secrets: what a plugin is
// configured with names no other vendor's channel, and carries no other
// channel's key anywhere (settings included).
func TestEachPluginGetsOnlyItsChannelsSecrets(t *testing.T) {
	src := `
channel "oa-1" {
  vendor    = "openai"
  base_url  = "https://api.openai.com"
  api_key   = "secret-openai-one-0123456789"
  protocols = ["openai_chat"]
  models    = ["m1"]
}
channel "oa-2" {
  vendor    = "openai"
  base_url  = "https://api.openai.com"
  api_key   = "secret-openai-two-0123456789"
  protocols = ["openai_chat"]
  models    = ["m1"]
}
channel "an" {
  vendor    = "anthropic"
  base_url  = "https://api.anthropic.com"
  api_key   = "secret-anthropic-0123456789"
  protocols = ["anthropic_messages"]
  models    = ["m2"]
}
channel "el" {
  vendor   = "elevenlabs"
  base_url = "https://api.elevenlabs.io"
  api_key  = "secret-eleven-0123456789"
  families = ["speech"]
  models   = ["tts"]
}
model "m1" {
  price {
    input  = "1"
    output = "1"
  }
}
model "m2" {
  price {
    input  = "1"
    output = "1"
  }
}
model "tts" {
  family = "speech"
  price {
    per_character = "0.001"
  }
}
`
	cfg, err := config.Parse([]byte(src), "secrets.hcl")
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	for _, ch := range cfg.Channels {
		owner[ch.APIKey] = ch.Vendor
	}
	if len(owner) != 4 {
		t.Fatalf("want 4 channel secrets, have %v", owner)
	}
	for _, name := range cfg.PluginNames() {
		vc := vendorConfig(cfg, name)
		if len(vc.Channels) == 0 {
			t.Errorf("%s: configured with no channel", name)
		}
		b, err := json.Marshal(vc)
		if err != nil {
			t.Fatal(err)
		}
		for key, vendor := range owner {
			has := strings.Contains(string(b), key)
			if vendor == name && !has {
				t.Errorf("%s lacks its own channel's secret", name)
			}
			if vendor != name && has {
				t.Errorf("%s received %s's channel secret", name, vendor)
			}
		}
	}
}
