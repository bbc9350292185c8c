package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/tollgate-gw/tollgate/core/billing"
	"github.com/tollgate-gw/tollgate/core/billing/stripe"
	"github.com/tollgate-gw/tollgate/core/billing/stripesim"
	"github.com/tollgate-gw/tollgate/core/config"
)

// provisionBilling builds card top-ups when the config takes them: the
// Stripe processor on the config's keys, or, for processor "sim", a
// simulated Stripe on a loopback listener of its own with keys made at
// start, which sends its events to this gateway's webhook once it listens.
// Whether top-ups run is the config the gateway started with.
func (g *Gateway) provisionBilling(context.Context) error {
	bl := g.cfg.Billing
	if !bl.Enabled {
		return nil
	}
	po := stripe.Options{SecretKey: bl.SecretKey, WebhookSecret: bl.WebhookSecret, APIURL: bl.APIURL,
		Tolerance: bl.WebhookTolerance, Logger: g.log}
	if bl.Processor == config.ProcessorSim {
		po.SecretKey, po.WebhookSecret = "sk_test_"+randomHex(12), "whsec_"+randomHex(16)
		ln, err := listen(bl.SimListen, "billing sim_listen", "billing { sim_listen }")
		if err != nil {
			return err
		}
		sim := stripesim.New(stripesim.Options{SecretKey: po.SecretKey, WebhookSecret: po.WebhookSecret,
			BaseURL: "http://" + ln.Addr().String(), Logger: g.log})
		srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second, ErrorLog: g.log.StandardLogger(nil)}
		go func() { _ = srv.Serve(ln) }()
		g.onCleanup(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			err := srv.Shutdown(ctx)
			sim.Close()
			return err
		})
		g.paySim, po.APIURL = sim, "http://"+ln.Addr().String()
	}
	g.topups = billing.New(billing.Options{Config: bl, Store: g.store, Processor: stripe.New(po), Logger: g.log, Now: g.now})
	return nil
}

// startPaySim points the simulated processor's events at this gateway's
// webhook and names its dashboard in the banner.
func (g *Gateway) startPaySim(addr string, b *banner) {
	if g.paySim == nil {
		return
	}
	host, port, _ := net.SplitHostPort(addr)
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	g.paySim.SetWebhookURL("http://" + net.JoinHostPort(host, port) + g.cfg.Billing.WebhookPath)
	b.extra = append(b.extra, [2]string{"payments:", fmt.Sprintf("simulated Stripe, no card is charged (its dashboard: %s/)",
		g.paySim.BaseURL())})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
