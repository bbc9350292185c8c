package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"net/http"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/console"
	"github.com/tollgate-gw/tollgate/core/logsapi"
)

// console builds the web console of a generation's cfg (nil when it is
// off): a client of the admin operations, the logs API's handler logs and
// the people's service, on the main listener under /console/ or on its own
// (console { listen }). Whether it runs, and where, is the config it
// started with: that takes a restart.
func (g *Gateway) console(cfg *config.Config, logs *logsapi.Handler) (http.Handler, error) {
	if !g.cfg.Console.Enabled {
		return nil, nil
	}
	mac := hmac.New(sha256.New, g.master)
	mac.Write([]byte("tollgate console v1"))
	secure := g.tls != nil || strings.HasPrefix(cfg.Server.PublicURL, "https://")
	o := console.Options{
		Config: cfg, Store: g.store, Admin: g.svc, Users: g.users, Logs: logs, Bases: g.kb, Billing: g.topups,
		Secret: mac.Sum(nil), Secure: secure, BaseURL: cfg.Server.PublicURL, Logger: g.log, Now: g.now,
	}
	if g.cfg.Console.Listen == "" {
		o.ConsoleURL = cfg.Server.PublicURL
	} else {
		// On its own listener, the console's host is not the API's.
		o.APIAddr = func() string {
			scheme := "http"
			if secure {
				scheme = "https"
			}
			if a := g.addr.Load(); a != nil {
				return scheme + "://" + *a
			}
			return ""
		}
	}
	return console.New(o)
}

// serveConsole is the console's own listener, when it has one: it serves
// the current generation's console.
func (g *Gateway) serveConsole(w http.ResponseWriter, r *http.Request) {
	if c := g.gen.Load().console; c != nil {
		c.ServeHTTP(w, r)
		return
	}
	http.NotFound(w, r)
}

// consoleServer is the console's listener's server.
func (g *Gateway) consoleServer() *http.Server {
	return &http.Server{Handler: http.HandlerFunc(g.serveConsole), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: g.log.StandardLogger(nil)}
}
