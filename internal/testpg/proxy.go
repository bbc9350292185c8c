package testpg

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy is a TCP relay on 127.0.0.1 between a gateway and its database
// that the test can cut: Cut resets every open connection at once,
// wherever its transactions stand, and refuses new ones until Mend.
type Proxy struct {
	Addr   string // host:port to connect to instead of the server
	target string
	ln     net.Listener

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	// moved counts the reads that carried bytes since the last Cut: a
	// cut after some fell among live exchanges.
	moved atomic.Int64
}

// NewProxy relays to target (host:port) until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
	})
	return p
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.relay(c)
	}
}

func (p *Proxy) relay(c net.Conn) {
	if !p.track(c) {
		reset(c)
		return
	}
	u, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(u) {
		reset(c)
		if u != nil {
			reset(u)
		}
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.moved.Add(1)
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go pipe(u, c)
	go pipe(c, u)
	<-done
	p.untrack(c)
	p.untrack(u)
	reset(c)
	reset(u)
	<-done
}

// track adds c to the open connections unless the link is cut.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Cut resets every open connection and refuses new ones until Mend. It
// returns how many connections were open and how many reads had moved
// bytes since the last cut.
func (p *Proxy) Cut() (open int, moved int64) {
	p.mu.Lock()
	p.cut = true
	open = len(p.conns)
	for c := range p.conns {
		reset(c)
		delete(p.conns, c)
	}
	p.mu.Unlock()
	return open / 2, p.moved.Swap(0)
}

// Mend lets connections through again.
func (p *Proxy) Mend() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// reset closes c with a TCP reset, as a cut link or a dead peer does.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
