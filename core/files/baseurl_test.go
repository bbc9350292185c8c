package files

import (
	"testing"
)

func TestBaseURL(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		public  string
		domains []string
		listen  string
		tls     bool
		want    string
	}{
		{"public_url wins", "https://api.example.com/", []string{"gw.example.com"}, "127.0.0.1:8080", true, "https://api.example.com"},
		{"public_url with a path", "https://example.com/gw", nil, "127.0.0.1:8080", false, "https://example.com/gw"},
		{"first TLS domain", "", []string{"gw.example.com", "other.example.com"}, ":443", true, "https://gw.example.com"},
		{"wildcard skipped", "", []string{"*.example.com", "gw.example.com"}, ":443", true, "https://gw.example.com"},
		{"only wildcards: the listen address", "", []string{"*.example.com"}, "10.0.0.5:8443", true, "https://10.0.0.5:8443"},
		{"the listen address", "", nil, "127.0.0.1:8080", false, "http://127.0.0.1:8080"},
		{"every interface: loopback", "", nil, "0.0.0.0:8080", false, "http://127.0.0.1:8080"},
		{"every interface, port only", "", nil, ":8080", false, "http://127.0.0.1:8080"},
		{"every IPv6 interface", "", nil, "[::]:8080", false, "http://[::1]:8080"},
		{"not listening yet", "", nil, "", false, ""},
		{"not listening yet, public_url", "http://gw", nil, "", false, "http://gw"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := BaseURL(tc.public, tc.domains, tc.listen, tc.tls); got != tc.want {
				t.Fatalf("BaseURL = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCheckPublicURL(t *testing.T) {
	for s, ok := range map[string]bool{
		"https://api.example.com":     true,
		"http://127.0.0.1:8080/":      true,
		"https://example.com/gateway": true,
		"api.example.com":             false,
		"ftp://example.com":           false,
		"https://":                    false,
		"https://u:p@example.com":     false,
		"https://example.com/?a=b":    false,
		"https://example.com/#x":      false,
		"https://example.com/?":       false,
		"https://exa mple.com":        false,
	} {
		if err := CheckPublicURL(s); (err == nil) != ok {
			t.Errorf("CheckPublicURL(%q) = %v", s, err)
		}
	}
}
