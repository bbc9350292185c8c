package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// rebinder is a DNS server the test controls: its first answer for a name
// is a public address, every later one 127.0.0.1, as a rebinding attacker
// answers (a check that resolves the name passes, the fetch that resolves
// it again reaches loopback).
type rebinder struct {
	pc      net.PacketConn
	asked   atomic.Int64 // A queries answered
	public  netip.Addr
	private netip.Addr
}

func startRebinder(t *testing.T) *rebinder {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &rebinder{pc: pc, public: netip.MustParseAddr("93.184.216.34"), private: netip.MustParseAddr("127.0.0.1")}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out, ok := r.answer(buf[:n]); ok {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	t.Cleanup(func() { pc.Close(); wg.Wait() })
	return r
}

func (r *rebinder) answer(q []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil {
		return nil, false
	}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) != 1 {
		return nil, false
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true})
	b.EnableCompression()
	_ = b.StartQuestions()
	_ = b.Question(qs[0])
	_ = b.StartAnswers()
	if qs[0].Type == dnsmessage.TypeA {
		ip := r.private
		if r.asked.Add(1) == 1 {
			ip = r.public
		}
		_ = b.AResource(dnsmessage.ResourceHeader{Name: qs[0].Name, Class: dnsmessage.ClassINET, TTL: 0}, dnsmessage.AResource{A: ip.As4()})
	}
	out, err := b.Finish()
	return out, err == nil
}

// resolver sends every lookup to the rebinder.
func (r *rebinder) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", r.pc.LocalAddr().String())
	}}
}

// A name checked as public, then resolved again to loopback when the
// fetch dials it, is refused: the check runs on the address dialled, not
// on an earlier answer, and the loopback server sees nothing.
func TestRebindingIsRefusedAtDial(t *testing.T) {
	var hits atomic.Int64
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("internal secrets"))
	}))
	defer victim.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(victim.URL, "http://"))

	dns := startRebinder(t)
	res := dns.resolver()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The time-of-check lookup: public, so a check on it would pass.
	ips, err := res.LookupNetIP(ctx, "ip4", "rebind.test")
	if err != nil || len(ips) != 1 || PrivateAddr(ips[0]) {
		t.Fatalf("first answer %v %v, want one public address", ips, err)
	}

	// The time of use: the client's dialler resolves again.
	d := Dialer(false)
	d.Resolver = res
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}, CheckRedirect: CheckRedirect}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://rebind.test:"+port+"/", nil)
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("the rebound name was fetched: %d", resp.StatusCode)
	}
	if !errors.Is(err, ErrPrivate) {
		t.Fatalf("refused with %v, want ErrPrivate", err)
	}
	if dns.asked.Load() < 2 {
		t.Fatalf("the dial did not resolve the name again (%d A queries)", dns.asked.Load())
	}
	if hits.Load() != 0 {
		t.Fatalf("the loopback server was reached %d times", hits.Load())
	}

	// The same policy allows it when the operator does.
	open := Dialer(true)
	open.Resolver = res
	c = &http.Client{Transport: &http.Transport{DialContext: open.DialContext, DisableKeepAlives: true}}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "http://rebind.test:"+port+"/", nil)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatalf("with private URLs allowed: %v", err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Fatalf("hits %d, want 1", hits.Load())
	}
}

// A name that always resolves to loopback is refused at its first dial.
func TestNameResolvingToLoopbackIsRefused(t *testing.T) {
	var hits atomic.Int64
	victim := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer victim.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(victim.URL, "http://"))
	dns := startRebinder(t)
	dns.asked.Store(1) // every answer is loopback now
	d := Dialer(false)
	d.Resolver = dns.resolver()
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, CheckRedirect: CheckRedirect}
	_, err := c.Get("http://inner.test:" + port + "/")
	if !errors.Is(err, ErrPrivate) || hits.Load() != 0 {
		t.Fatalf("err %v, hits %d", err, hits.Load())
	}
}
