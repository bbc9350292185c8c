package httpvendor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/tollgate-gw/tollgate/core/netguard"
)

// Fetching URLs a client handed over (reference images): unlike a
// channel's base URL, such a URL is not the operator's, so by default it
// may not reach private, loopback or link-local addresses (PRODUCT §7,
// URLs the gateway is handed). The check runs on the address actually
// dialled, after DNS, so a name that resolves to a private address (or
// re-resolves to one) is refused too; every redirect is dialled the same
// way. Config.AllowPrivateURLs lifts it.

// errPrivate is what the dialler refuses a private address with.
var errPrivate = netguard.ErrPrivate

// PrivateAddr reports whether ip is not a public unicast address.
func PrivateAddr(ip netip.Addr) bool { return netguard.PrivateAddr(ip) }

func newFetchClient(allowPrivate bool) *http.Client {
	d := netguard.Dialer(allowPrivate)
	return &http.Client{
		// No proxy: the check must see the address the bytes come from.
		Transport: &http.Transport{
			DialContext: d.DialContext, ForceAttemptHTTP2: true, MaxIdleConns: 64, MaxIdleConnsPerHost: 4,
			IdleConnTimeout: 30 * time.Second, TLSHandshakeTimeout: 10 * time.Second,
		},
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
				return errors.New("a redirect left http(s)")
			}
			return nil
		},
	}
}

// FetchError is why a client's URL could not be fetched; its message is
// meant for the client.
type FetchError struct{ Reason string }

func (e *FetchError) Error() string { return e.Reason }

// Fetch gets a URL a client handed over, at most limit bytes, honouring
// the configured private-address policy. It returns the body and its
// content type; a *FetchError says why not, a *vendor.Failure that ctx
// ended.
func (v *Vendor) Fetch(ctx context.Context, rawURL string, limit int64) ([]byte, string, error) {
	hc := v.fetchPublic
	if v.allowPrivate.Load() {
		hc = v.fetchAny
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil || hr.URL.Scheme != "http" && hr.URL.Scheme != "https" {
		return nil, "", &FetchError{Reason: "not an http(s) URL"}
	}
	hr.Header["User-Agent"] = v.ua
	resp, err := hc.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", classify(ctx, err, &timingNone)
		}
		if errors.Is(err, errPrivate) {
			return nil, "", &FetchError{Reason: errPrivate.Error()}
		}
		return nil, "", &FetchError{Reason: "unreachable (" + classify(ctx, err, &timingNone).Message + ")"}
	}
	defer resp.Body.Close()
	if !ok2xx(resp.StatusCode) {
		return nil, "", &FetchError{Reason: "it answered HTTP " + strconv.Itoa(resp.StatusCode)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", classify(ctx, err, &timingNone)
		}
		return nil, "", &FetchError{Reason: "its answer broke off"}
	}
	if int64(len(b)) > limit {
		return nil, "", &FetchError{Reason: fmt.Sprintf("it is larger than %d bytes", limit)}
	}
	return b, resp.Header.Get("Content-Type"), nil
}
