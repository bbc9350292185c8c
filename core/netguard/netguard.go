// Package netguard is the private-address policy for URLs the gateway is
// handed rather than configured (PRODUCT §7, URLs the gateway is handed):
// a client's reference, an upstream's result link. Such a URL may not
// reach private, loopback or link-local addresses unless the operator
// allows it (server { allow_private_urls }). The check runs on the address
// actually dialled, after DNS, so a name that resolves to a private
// address (or re-resolves to one) is refused too, redirects included.
package netguard

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ErrPrivate is what the dialler refuses a private address with.
var ErrPrivate = errors.New("the URL points to a private, loopback, link-local or special-purpose address")

// special are the ranges of the IANA special-purpose address registries
// (RFC 6890 and its updates) that are not globally reachable, and those
// that embed another address (NAT64, 6to4, Teredo, IPv4-compatible and
// IPv4-translated IPv6), which could name a private one.
var special = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
		"::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64",
		"100:0:0:1::/64", "2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20", "5f00::/16",
		"fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// PrivateAddr reports whether ip is not a public unicast address: a
// private, loopback, link-local, multicast or other special-purpose one.
func PrivateAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range special {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// CheckRedirect is the redirect policy of URLs the gateway is handed: at
// most five, each within http(s) and dialled through the same check; a
// redirect's own userinfo is dropped, and a redirect to another host drops
// every header the first request carried (an upstream's credentials go to
// the upstream only).
func CheckRedirect(r *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("too many redirects")
	}
	if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
		return errors.New("a redirect left http(s)")
	}
	r.URL.User = nil
	if r.URL.Host != via[0].URL.Host {
		r.Header = http.Header{"User-Agent": via[0].Header["User-Agent"]}
	}
	return nil
}

// Dialer is a dialler that refuses private addresses unless allowPrivate.
func Dialer(allowPrivate bool) *net.Dialer {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || PrivateAddr(ap.Addr()) {
				return ErrPrivate
			}
			return nil
		}
	}
	return d
}

// Client is an HTTP client for URLs the gateway is handed: no proxy (the
// check must see the address the bytes come from), redirects as
// CheckRedirect says.
func Client(allowPrivate bool) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext: Dialer(allowPrivate).DialContext, ForceAttemptHTTP2: true, MaxIdleConns: 64,
			MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second, TLSHandshakeTimeout: 10 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
		},
		CheckRedirect: CheckRedirect,
	}
}
