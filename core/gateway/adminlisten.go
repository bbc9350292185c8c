package gateway

import (
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/hashicorp/go-hclog"
)

// The admin API holds every account and reveals every raw key. By default
// it is served on the API's own listener; server { admin_listen } moves it
// to an address of its own (a port alone binds loopback), and the API's
// listener no longer serves it. Wherever it is served beyond loopback,
// its token must be long enough not to be guessed (minAdminToken).

// minAdminToken is the shortest admin token served beyond loopback.
const minAdminToken = 32

// publicAdmin is the admin API the API's listener serves: none when it has
// its own.
func (g *Gateway) publicAdmin() http.Handler {
	if g.cfg.Server.AdminListen != "" {
		return nil
	}
	return g.admin
}

// adminAddr is the address admin_listen binds: a port alone is loopback.
func adminAddr(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return s
}

// loopback reports whether addr (host:port) is reachable from this machine
// only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkAdminToken refuses a short admin token on a listener beyond
// loopback.
func (g *Gateway) checkAdminToken(addr string) error {
	if loopback(addr) || len(g.token) >= minAdminToken {
		return nil
	}
	where := "server { listen }"
	if g.cfg.Server.AdminListen != "" {
		where = "server { admin_listen }"
	}
	return fmt.Errorf("the admin token is %d characters, and the admin API would be served beyond loopback on %s (%s): "+
		"use a token of %d or more random characters (or leave it unset and one is generated), or serve the admin API on loopback with server { admin_listen = \"127.0.0.1:PORT\" }",
		len(g.token), addr, where, minAdminToken)
}

// adminListener is the admin API's own server, when it has one.
type adminListener struct {
	srv *http.Server
	ln  net.Listener
}

// checkAdmin refuses, before anything listens, a short admin token on the
// address the admin API will be served on: admin_listen, else listen.
func (g *Gateway) checkAdmin() error {
	if a := g.cfg.Server.AdminListen; a != "" {
		return g.checkAdminToken(adminAddr(a))
	}
	return g.checkAdminToken(g.cfg.Server.Listen)
}

// adminServer binds admin_listen when it is set.
func (g *Gateway) adminServer(b *banner) (*adminListener, error) {
	s := g.cfg.Server
	if s.AdminListen == "" {
		return &adminListener{}, nil
	}
	ln, err := listen(adminAddr(s.AdminListen), "admin_listen", "server { admin_listen }")
	if err != nil {
		return nil, err
	}
	if !loopback(ln.Addr().String()) {
		g.log.Warn("the admin API is served over plain HTTP beyond loopback; keep its address on a private network", "admin_listen", ln.Addr().String())
	}
	b.extra = append(b.extra, [2]string{"admin:", "http://" + ln.Addr().String() + "/admin/v1 (tollgate admin --url http://" + ln.Addr().String() + ")"})
	return &adminListener{ln: ln, srv: &http.Server{
		Handler: g.admin, ReadHeaderTimeout: s.HeaderTimeoutOrDefault(), ReadTimeout: s.BodyTimeoutOrDefault(),
		IdleTimeout: s.IdleTimeoutOrDefault(), WriteTimeout: s.WriteTimeoutOrDefault(),
		ErrorLog: g.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}}, nil
}

func (a *adminListener) serve(errc chan<- error) {
	if a.srv != nil {
		go func() {
			if err := a.srv.Serve(a.ln); !errors.Is(err, http.ErrServerClosed) {
				select {
				case errc <- err:
				default:
				}
			}
		}()
	}
}

func (a *adminListener) close() {
	if a.srv != nil {
		_ = a.srv.Close()
		_ = a.ln.Close()
	}
}
