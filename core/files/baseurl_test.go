package files

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestBaseURL(t *testing.T) {
	plain := httptest.NewRequest("GET", "http://127.0.0.1:8080/v1/images/generations", nil)
	secure := httptest.NewRequest("GET", "https://gw.local:8443/v1/images/generations", nil)
	secure.TLS = &tls.ConnectionState{}
	forwarded := httptest.NewRequest("GET", "http://10.0.0.5/v1/x", nil)
	forwarded.Header.Set("X-Forwarded-Proto", "https")
	forwarded.Header.Set("X-Forwarded-Host", "evil.example")

	for _, tc := range []struct {
		desc    string
		public  string
		domains []string
		r       any
		want    string
	}{
		{"public_url wins", "https://api.example.com/", []string{"gw.example.com"}, plain, "https://api.example.com"},
		{"public_url with a path", "https://example.com/gw", nil, plain, "https://example.com/gw"},
		{"first TLS domain", "", []string{"gw.example.com", "other.example.com"}, plain, "https://gw.example.com"},
		{"wildcard skipped", "", []string{"*.example.com", "gw.example.com"}, plain, "https://gw.example.com"},
		{"only wildcards: the request", "", []string{"*.example.com"}, secure, "https://gw.local:8443"},
		{"plain request", "", nil, plain, "http://127.0.0.1:8080"},
		{"TLS request", "", nil, secure, "https://gw.local:8443"},
		{"forwarded headers ignored", "", nil, forwarded, "http://10.0.0.5"},
		{"no request", "", nil, nil, ""},
		{"no request, public_url", "http://gw", nil, nil, "http://gw"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var got string
			if tc.r == nil {
				got = BaseURL(tc.public, tc.domains, nil)
			} else {
				got = BaseURL(tc.public, tc.domains, tc.r.(*http.Request))
			}
			if got != tc.want {
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
