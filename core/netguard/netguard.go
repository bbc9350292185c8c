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
var ErrPrivate = errors.New("the URL points to a private, loopback or link-local address")

// cgnat is the shared address space (RFC 6598), private in practice.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// PrivateAddr reports whether ip is not a public unicast address.
func PrivateAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return !ip.IsValid() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() ||
		ip.IsUnspecified() || cgnat.Contains(ip)
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
// check must see the address the bytes come from), at most five
// redirects, each within http(s), and a redirect to another host drops
// every header the first request carried (an upstream's credentials go
// to the upstream only).
func Client(allowPrivate bool) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext: Dialer(allowPrivate).DialContext, ForceAttemptHTTP2: true, MaxIdleConns: 64,
			MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second, TLSHandshakeTimeout: 10 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
		},
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
				return errors.New("a redirect left http(s)")
			}
			if r.URL.Host != via[0].URL.Host {
				r.Header = http.Header{"User-Agent": via[0].Header["User-Agent"]}
			}
			return nil
		},
	}
}
