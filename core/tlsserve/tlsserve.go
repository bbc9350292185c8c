// Package tlsserve is the gateway's HTTPS: automatic certificates from an
// ACME CA with caddyserver/certmagic (obtained at start, renewed in the
// background, kept under <data dir>/certs), or the operator's own
// certificate and key files (read again when they change or on SIGHUP),
// and the plain-HTTP side: ACME HTTP-01 challenges and a redirect of
// everything else to HTTPS.
package tlsserve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/config"
)

// Options configure New.
type Options struct {
	// Config is the gateway's config: server { tls, listen, http_listen }.
	Config *config.Config
	// DataDir is the default parent of the certificate storage (certs/).
	DataDir string
	Logger  hclog.Logger
	// WatchEvery is how often the static files are checked for a change
	// (default 10 s).
	WatchEvery time.Duration
}

// TLS serves HTTPS for one gateway.
type TLS struct {
	log     hclog.Logger
	cfg     *tls.Config
	domains []string
	// Automatic certificates.
	magic  *certmagic.Config
	issuer *certmagic.ACMEIssuer
	cache  *certmagic.Cache
	// Static certificates.
	static *staticCert

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// Check loads what the tls block names (the certificate files, the
// ca_root) without serving or writing anything: `tollgate config check`.
func Check(c *config.Config) error {
	t := c.Server.TLS
	switch {
	case t == nil:
		return nil
	case !t.Automatic():
		_, err := loadStatic(t.CertFile, t.KeyFile)
		if err != nil {
			return c.Refuse(config.Ref{Kind: "server.tls", Attr: "cert_file"}, "%v", err)
		}
	case t.CARoot != "":
		_, err := rootPool(c)
		return err
	}
	return nil
}

// rootPool reads ca_root.
func rootPool(c *config.Config) (*x509.CertPool, error) {
	t := c.Server.TLS
	pem, err := os.ReadFile(t.CARoot)
	if err != nil {
		return nil, c.Refuse(config.Ref{Kind: "server.tls", Attr: "ca_root"}, "%v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, c.Refuse(config.Ref{Kind: "server.tls", Attr: "ca_root"}, "%s holds no PEM certificate", t.CARoot)
	}
	return roots, nil
}

// New prepares HTTPS as cfg.Server.TLS says; nil when there is no tls
// block. A problem the operator must fix (a certificate file that does not
// load, an unreadable ca_root) is a *config.Error at its place in the
// file. Certificates are obtained by Start, not here.
func New(o Options) (*TLS, error) {
	c := o.Config
	t := c.Server.TLS
	if t == nil {
		return nil, nil
	}
	s := &TLS{log: o.Logger.Named("tls"), domains: t.Domains, stop: make(chan struct{})}
	if !t.Automatic() {
		sc, err := loadStatic(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, c.Refuse(config.Ref{Kind: "server.tls", Attr: "cert_file"}, "%v", err)
		}
		s.static = sc
		s.cfg = &tls.Config{
			MinVersion:     tls.VersionTLS12,
			NextProtos:     []string{"h2", "http/1.1"},
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return sc.current.Load(), nil },
		}
		every := o.WatchEvery
		if every <= 0 {
			every = 10 * time.Second
		}
		s.wg.Add(1)
		go s.watch(every)
		return s, nil
	}
	var roots *x509.CertPool
	if t.CARoot != "" {
		var err error
		if roots, err = rootPool(c); err != nil {
			return nil, err
		}
	}
	storage := t.Storage
	if storage == "" {
		storage = filepath.Join(o.DataDir, "certs")
	}
	if err := os.MkdirAll(storage, 0o700); err != nil {
		return nil, c.Refuse(config.Ref{Kind: "server.tls", Attr: "storage"}, "%v", err)
	}
	zl := zapLogger(s.log)
	var magic *certmagic.Config
	s.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert:   func(certmagic.Certificate) (*certmagic.Config, error) { return magic, nil },
		RenewCheckInterval: t.RenewInterval,
		Logger:             zl,
	})
	magic = certmagic.New(s.cache, certmagic.Config{
		Storage:            &certmagic.FileStorage{Path: storage},
		RenewalWindowRatio: t.RenewalWindowRatio,
		Logger:             zl,
		OnEvent:            s.event,
	})
	ca := t.CA
	if ca == "" {
		ca = certmagic.LetsEncryptProductionCA
	}
	listenHost, tlsPort := hostPort(c.Server.Listen)
	_, httpPort := hostPort(c.Server.HTTPListen)
	s.issuer = certmagic.NewACMEIssuer(magic, certmagic.ACMEIssuer{
		CA: ca, TestCA: ca, Email: t.Email, Agreed: true, TrustedRoots: roots,
		// The challenges are answered by the gateway's own listeners
		// (certmagic finds the ports taken and leaves them to us).
		ListenHost: listenHost, AltTLSALPNPort: tlsPort, AltHTTPPort: httpPort,
		DisableHTTPChallenge: c.Server.HTTPListen == "",
		Logger:               zl,
	})
	magic.Issuers = []certmagic.Issuer{s.issuer}
	s.magic = magic
	s.cfg = magic.TLSConfig()
	s.cfg.MinVersion = tls.VersionTLS12
	// A client that names no server (an IP address) gets the first domain.
	magic.DefaultServerName = t.Domains[0]
	return s, nil
}

// Start begins managing the certificates: those in storage are loaded,
// the others obtained in the background (handshakes for a name wait until
// its certificate is there), and renewals are checked every
// renew_interval.
func (s *TLS) Start(ctx context.Context) error {
	if s == nil || s.magic == nil {
		return nil
	}
	return s.magic.ManageAsync(context.WithoutCancel(ctx), s.domains)
}

// Config is the HTTPS listener's tls.Config.
func (s *TLS) Config() *tls.Config { return s.cfg }

// Domains are the names served, the first being the host of links.
func (s *TLS) Domains() []string {
	if s == nil {
		return nil
	}
	return s.domains
}

// Ready reports whether every domain has a certificate (readiness).
func (s *TLS) Ready() error {
	if s == nil {
		return nil
	}
	if s.static != nil {
		return nil
	}
	for _, d := range s.domains {
		if _, err := s.magic.GetCertificate(&tls.ClientHelloInfo{ServerName: d}); err != nil {
			return fmt.Errorf("no certificate yet for %s", d)
		}
	}
	return nil
}

// Reload reads the static certificate files again (SIGHUP); automatic
// certificates need nothing.
func (s *TLS) Reload() error {
	if s == nil || s.static == nil {
		return nil
	}
	changed, err := s.static.reload(true)
	if err != nil {
		return err
	}
	if changed {
		s.log.Info("certificate files read again", "cert_file", s.static.certFile)
	}
	return nil
}

// HTTPHandler is what the plain-HTTP listener serves: ACME HTTP-01
// challenges, and a permanent redirect to HTTPS (on the port of httpsAddr
// when it is not 443) for everything else. The redirect keeps the
// request's host when it is one of the domains (or there are none), else
// goes to the first domain: a forged Host does not make it an open
// redirect.
func (s *TLS) HTTPHandler(httpsAddr string) http.Handler {
	_, port := hostPort(httpsAddr)
	redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if len(s.domains) > 0 && !slices.Contains(s.domains, strings.ToLower(host)) {
			host = s.domains[0]
		}
		if port != 0 && port != 443 {
			host = net.JoinHostPort(host, strconv.Itoa(port))
		}
		w.Header().Set("Connection", "close")
		http.Redirect(w, r, "https://"+host+r.URL.RequestURI(), http.StatusPermanentRedirect)
	})
	if s.issuer == nil {
		return redirect
	}
	return s.issuer.HTTPChallengeHandler(redirect)
}

// Close stops renewals and the file watch.
func (s *TLS) Close() error {
	if s == nil {
		return nil
	}
	s.stopOnce.Do(func() {
		close(s.stop)
		if s.cache != nil {
			s.cache.Stop()
		}
	})
	s.wg.Wait()
	return nil
}

// event logs certmagic's certificate events: an operator sees each
// certificate obtained or renewed, and each failure.
func (s *TLS) event(_ context.Context, event string, data map[string]any) error {
	switch event {
	case "cert_obtained":
		if renewal, _ := data["renewal"].(bool); renewal {
			s.log.Info("certificate renewed", "identifier", data["identifier"], "issuer", data["issuer"])
		} else {
			s.log.Info("certificate obtained", "identifier", data["identifier"], "issuer", data["issuer"])
		}
	case "cert_failed":
		s.log.Error("certificate could not be obtained", "identifier", data["identifier"], "renewal", data["renewal"], "error", data["error"])
	case "cached_managed_cert":
		s.log.Debug("certificate loaded", "names", data["sans"])
	}
	return nil
}

// watch reads the static files again when their modification time
// changes.
func (s *TLS) watch(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		changed, err := s.static.reload(false)
		switch {
		case err != nil:
			s.log.Error("the certificate files changed but do not load; the previous certificate is kept", "error", err)
		case changed:
			s.log.Info("certificate files changed; read again", "cert_file", s.static.certFile)
		}
	}
}

// staticCert is the operator's own certificate, swapped atomically.
type staticCert struct {
	certFile, keyFile string
	current           atomic.Pointer[tls.Certificate]
	mu                sync.Mutex
	mod               [2]time.Time
}

func loadStatic(certFile, keyFile string) (*staticCert, error) {
	sc := &staticCert{certFile: certFile, keyFile: keyFile}
	if _, err := sc.reload(true); err != nil {
		return nil, err
	}
	return sc, nil
}

// reload reads the files when forced or when they changed; a pair that
// does not load leaves the current certificate in place.
func (sc *staticCert) reload(force bool) (bool, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	var mod [2]time.Time
	for i, p := range []string{sc.certFile, sc.keyFile} {
		fi, err := os.Stat(p)
		if err != nil {
			return false, err
		}
		mod[i] = fi.ModTime()
	}
	if !force && mod == sc.mod {
		return false, nil
	}
	pair, err := tls.LoadX509KeyPair(sc.certFile, sc.keyFile)
	if err != nil {
		return false, fmt.Errorf("certificate %s and key %s: %w", sc.certFile, sc.keyFile, err)
	}
	if pair.Leaf == nil && len(pair.Certificate) > 0 {
		pair.Leaf, _ = x509.ParseCertificate(pair.Certificate[0])
	}
	sc.mod = mod
	sc.current.Store(&pair)
	return true, nil
}

// hostPort splits a listen address; port 0 when there is none.
func hostPort(addr string) (string, int) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0
	}
	n, _ := strconv.Atoi(p)
	return h, n
}
