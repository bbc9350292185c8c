package files

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// BaseURL is the base a link carries (PRODUCT.md §7 Hosted results):
//
//  1. publicURL (server { public_url }) when set;
//  2. else https:// and the first TLS domain when TLS is on (a wildcard
//     domain is skipped: it names no host);
//  3. else the request's own Host, with https when the request came over
//     TLS and http otherwise.
//
// X-Forwarded-Proto and X-Forwarded-Host are not trusted: any client can
// send them. A gateway behind a proxy sets public_url. r may be nil when
// publicURL or a TLS domain decides; otherwise the answer is "".
func BaseURL(publicURL string, tlsDomains []string, r *http.Request) string {
	if publicURL != "" {
		return strings.TrimRight(publicURL, "/")
	}
	for _, d := range tlsDomains {
		if d != "" && !strings.HasPrefix(d, "*") {
			return "https://" + d
		}
	}
	if r == nil || r.Host == "" {
		return ""
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// CheckPublicURL validates a server { public_url } value: an absolute
// http or https URL with a host, and no query or fragment (links append
// /files/{id}?...).
func CheckPublicURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("public_url must start with http:// or https://")
	case u.Host == "":
		return errors.New("public_url must name a host")
	case u.User != nil:
		return errors.New("public_url must not carry credentials")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return errors.New("public_url must not have a query or a fragment")
	}
	return nil
}
