package files

import (
	"errors"
	"net"
	"net/url"
	"strings"
)

// BaseURL is the base a link carries (PRODUCT.md §7 Hosted results, as
// docs/decisions.md amends it):
//
//  1. publicURL (server { public_url }) when set;
//  2. else https:// and the first TLS domain when TLS is on (a wildcard
//     domain is skipped: it names no host);
//  3. else the address the gateway listens on (loopback when it listens
//     on every interface), https when TLS is on.
//
// Never a request's Host header, nor X-Forwarded-*: any client can send
// them, and links are kept in rows and task results other keys read. A
// gateway behind a proxy sets public_url. listen is the bound address
// ("" before the gateway listens: no base then).
func BaseURL(publicURL string, tlsDomains []string, listen string, tlsOn bool) string {
	if publicURL != "" {
		return strings.TrimRight(publicURL, "/")
	}
	for _, d := range tlsDomains {
		if d != "" && !strings.HasPrefix(d, "*") {
			return "https://" + d
		}
	}
	if listen == "" {
		return ""
	}
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	return scheme + "://" + Reach(listen)
}

// Reach is the address this machine reaches a listener bound to addr at:
// addr itself, or loopback when it is bound to every interface.
func Reach(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if ip != nil && ip.To4() == nil {
			return net.JoinHostPort("::1", port)
		}
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
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
