package httpvendor

import (
	"net/url"
	"slices"
	"strings"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// BaseURL checks a channel's base_url and returns it without a trailing
// slash, so a path can be appended. The URL is the vendor root: when
// refuseV1 is set a path ending in /v1 is refused, since the plugin adds it
// and /v1/v1/... would only fail on the first call.
func BaseURL(ch vendor.Channel, refuseV1 bool) (string, error) {
	raw := strings.TrimSpace(ch.BaseURL)
	if raw == "" {
		return "", vendor.ChannelError(ch.Name, "base_url", "base_url is empty (the vendor root, e.g. https://api.openai.com)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", vendor.ChannelError(ch.Name, "base_url", "base_url: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", vendor.ChannelError(ch.Name, "base_url", "base_url %q: the scheme must be http or https", raw)
	}
	if u.Host == "" {
		return "", vendor.ChannelError(ch.Name, "base_url", "base_url %q has no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", vendor.ChannelError(ch.Name, "base_url", "base_url %q: a query or fragment cannot take a path after it", raw)
	}
	base := strings.TrimRight(raw, "/")
	if refuseV1 && (strings.HasSuffix(base, "/v1") || strings.HasSuffix(base, "/v1beta")) {
		return "", vendor.ChannelError(ch.Name, "base_url", "base_url %q: give the vendor root without /v1 (%s); the plugin adds the version", raw, strings.TrimSuffix(strings.TrimSuffix(base, "/v1"), "/v1beta"))
	}
	return base, nil
}

// CheckSettings refuses channel settings the vendor does not know, so a
// misspelt setting fails at start instead of being ignored.
func CheckSettings(ch vendor.Channel, known ...string) error {
	for k := range ch.Settings {
		if !slices.Contains(known, k) {
			if len(known) == 0 {
				return vendor.ChannelError(ch.Name, "settings", "unknown setting %q (this vendor takes none)", k)
			}
			return vendor.ChannelError(ch.Name, "settings", "unknown setting %q (known: %s)", k, strings.Join(known, ", "))
		}
	}
	return nil
}

// Protocols returns the channel's protocols, all of which the vendor must
// speak; a channel naming none gets every protocol the vendor speaks.
func Protocols(ch vendor.Channel, spoken []string) ([]string, error) {
	if len(ch.Protocols) == 0 {
		return spoken, nil
	}
	for _, p := range ch.Protocols {
		if !slices.Contains(spoken, p) {
			return nil, vendor.ChannelError(ch.Name, "protocols", "this vendor does not speak protocol %q (it speaks %s)",
				p, strings.Join(spoken, ", "))
		}
	}
	return ch.Protocols, nil
}

// APIKey returns the channel's key, refusing an empty one when required.
func APIKey(ch vendor.Channel, required bool) (string, error) {
	k := strings.TrimSpace(ch.APIKey)
	if k == "" && required {
		return "", vendor.ChannelError(ch.Name, "api_key", "api_key is empty (usually api_key = env(\"VENDOR_API_KEY\"); is the variable set?)")
	}
	return k, nil
}
