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
		CheckRedirect: noCredentials,
	}
}

// noCredentials is the redirect policy of a client's URL: netguard's, and
// no credential on any hop (the gateway has none of its own to give such
// a URL).
func noCredentials(r *http.Request, via []*http.Request) error {
	if err := netguard.CheckRedirect(r, via); err != nil {
		return err
	}
	for _, h := range []string{"Authorization", "Proxy-Authorization", "Cookie"} {
		r.Header.Del(h)
	}
	return nil
}

// FetchError is why a client's URL could not be fetched. Reason, its
// message, is meant for the client: one text for every refusal and
// failure once a request could be made, so that a client cannot tell a
// closed port from a refused address or an error status (and scan the
// network behind the gateway with it). Detail is for the operator's logs.
type FetchError struct{ Reason, Detail string }

func (e *FetchError) Error() string { return e.Reason }

// fetchFailed is the one reason given for a fetch that was tried.
const fetchFailed = "it gave no usable answer (the gateway fetches public http(s) URLs that answer 2xx within the size limit)"

func failedFetch(detail string) *FetchError { return &FetchError{Reason: fetchFailed, Detail: detail} }

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
		return nil, "", &FetchError{Reason: "not an http(s) URL", Detail: "not an http(s) URL"}
	}
	hr.Header["User-Agent"] = v.ua
	resp, err := hc.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", classify(ctx, err, &timingNone)
		}
		if errors.Is(err, errPrivate) {
			return nil, "", failedFetch(errPrivate.Error())
		}
		return nil, "", failedFetch("unreachable (" + classify(ctx, err, &timingNone).Message + ")")
	}
	defer resp.Body.Close()
	if !ok2xx(resp.StatusCode) {
		return nil, "", failedFetch("it answered HTTP " + strconv.Itoa(resp.StatusCode))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", classify(ctx, err, &timingNone)
		}
		return nil, "", failedFetch("its answer broke off")
	}
	if int64(len(b)) > limit {
		return nil, "", failedFetch(fmt.Sprintf("it is larger than %d bytes", limit))
	}
	return b, resp.Header.Get("Content-Type"), nil
}
