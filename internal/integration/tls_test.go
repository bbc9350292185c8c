package integration

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"
	"github.com/miekg/dns"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// tlsDomain is the name the gateway gets a certificate for; the test's
// DNS server answers 127.0.0.1 for it (and every other name).
const tlsDomain = "gw.tollgate.test"

// freePort is a loopback port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startDNS answers A 127.0.0.1 for every name, nothing else, over TCP
// (what pebble's validation authority asks).
func startDNS(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{Listener: ln, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		for _, q := range r.Question {
			if q.Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{
					Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1},
					A:   net.ParseIP("127.0.0.1").To4(),
				})
			}
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}

// pebble is Let's Encrypt's test ACME server, in this process: its
// certificates live validity seconds; its validation authority reaches
// the gateway's HTTP-01 port httpPort and TLS-ALPN-01 port tlsPort through
// the test's DNS server. It returns the directory URL, a PEM file of the
// root of its own HTTPS certificate, and the root that signs what it
// issues.
func startPebble(t *testing.T, httpPort, tlsPort int, validity uint64) (dir, caRoot string, roots *x509.CertPool) {
	t.Helper()
	logger := log.New(io.Discard, "pebble ", log.LstdFlags)
	if testing.Verbose() {
		logger = log.New(os.Stderr, "pebble ", log.LstdFlags)
	}
	store := db.NewMemoryStore()
	authority := ca.New(logger, store, "", "ecdsa", 0, 1, map[string]ca.Profile{
		"default": {Description: "short-lived, to see renewals", ValidityPeriod: validity},
	})
	v := va.New(logger, httpPort, tlsPort, false, startDNS(t), store)
	w := wfe.New(logger, store, v, authority, []string{"pebble.letsencrypt.org"}, false, false, 1, 1)
	srv := httptest.NewTLSServer(w.Handler())
	t.Cleanup(srv.Close)
	caRoot = filepath.Join(t.TempDir(), "pebble-https-root.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caRoot, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(authority.GetRootCert(0).Cert)
	return srv.URL + wfe.DirectoryPath, caRoot, roots
}

// A certificate from a local ACME server, a chat call over HTTPS by a
// client that trusts only that CA, the redirect on the HTTP port, and a
// renewal forced by a short lifetime and observed: the certificate the
// gateway serves changes, and it says so.
func TestAutomaticHTTPSWithALocalACMEServer(t *testing.T) {
	// Not parallel: pebble reads its knobs from the environment.
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0")
	httpsPort, httpPort := freePort(t), freePort(t)
	dir, caRoot, roots := startPebble(t, httpPort, httpsPort, 30)
	cfg := reloadConfig("1", "2") + fmt.Sprintf(`
server {
  listen      = "127.0.0.1:%d"
  http_listen = "127.0.0.1:%d"
  tls {
    domains              = [%q]
    email                = "ops@tollgate.test"
    ca                   = %q
    ca_root              = %q
    renew_interval       = "1s"
    renewal_window_ratio = 0.8
  }
}`, httpsPort, httpPort, tlsDomain, dir, caRoot)
	// reloadConfig has a server block of its own: keep the TLS one.
	cfg = strings.Replace(cfg, "server {\n  drain_timeout = \"20s\"\n}\n", "", 1)
	g := testgw.Start(t, testgw.Options{Config: cfg, Args: []string{"--listen", "127.0.0.1:" + strconv.Itoa(httpsPort)}})
	if !strings.HasPrefix(g.URL, "https://") {
		t.Fatalf("the banner says %s", g.URL)
	}

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, ServerName: tlsDomain},
		ForceAttemptHTTP2: true,
	}}
	g.Client = client // its books are audited over HTTPS when the test ends
	base := "https://127.0.0.1:" + strconv.Itoa(httpsPort)
	// The certificate comes in the background: handshakes wait for it.
	var first *x509.Certificate
	for deadline := time.Now().Add(60 * time.Second); first == nil; time.Sleep(200 * time.Millisecond) {
		first, _ = served(roots, httpsPort)
		if first == nil && time.Now().After(deadline) {
			t.Fatalf("no certificate from the ACME server in 60s:\n%s", g.Output())
		}
	}
	if first.Subject.CommonName != tlsDomain && (len(first.DNSNames) == 0 || first.DNSNames[0] != tlsDomain) {
		t.Errorf("certificate for %v, want %s", first.DNSNames, tlsDomain)
	}

	adminCall := func(method, path string, body, out any) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+"/admin/v1"+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+testgw.AdminToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil || resp.StatusCode/100 != 2 {
			t.Fatalf("admin %s %s: %d %v", method, path, resp.StatusCode, err)
		}
	}
	var acct struct{ ID string }
	adminCall("POST", "/accounts", map[string]any{"name": "tls", "initial_credit": "10"}, &acct)
	var key struct{ Key string }
	adminCall("POST", "/accounts/"+acct.ID+"/keys", map[string]any{"name": "tls"}, &key)

	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(chatBody("reload-chat", "over https", "")))
	req.Header.Set("Authorization", "Bearer "+key.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || !strings.Contains(string(body), "over https") {
		t.Fatalf("chat over https: %d tls=%v %s", resp.StatusCode, resp.TLS != nil, body)
	}
	var answer struct {
		Usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		}
	}
	_ = json.Unmarshal(body, &answer)
	var a struct{ Balance, Held string }
	adminCall("GET", "/accounts/"+acct.ID, nil, &a)
	cost := money.MustParse("10") - money.MustParse(a.Balance)
	want := per("1", "2", "", "").cost(t, usage{in: answer.Usage.PromptTokens, out: answer.Usage.CompletionTokens})
	if a.Held != "0" || cost != want || cost == 0 {
		t.Errorf("after one call: balance %s held %s (cost %s), want cost %s", a.Balance, a.Held, cost, want)
	}

	// Plain HTTP: redirected to HTTPS on the domain (a host that is not
	// one of the domains is not kept: no open redirect).
	noFollow := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, host := range []string{tlsDomain, "evil.example"} {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:"+strconv.Itoa(httpPort)+"/v1/models?x=1", nil)
		req.Host = host
		r, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		want := "https://" + tlsDomain + ":" + strconv.Itoa(httpsPort) + "/v1/models?x=1"
		if loc := r.Header.Get("Location"); r.StatusCode != http.StatusPermanentRedirect || loc != want {
			t.Errorf("plain HTTP for %s: %d Location %q, want 308 to %s", host, r.StatusCode, loc, want)
		}
	}

	// A 30 s certificate is due for renewal after 6 s (ratio 0.8); the
	// check runs every second: the served certificate changes.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		cur, _ := served(roots, httpsPort)
		if cur != nil && cur.SerialNumber.Cmp(first.SerialNumber) != 0 {
			if !cur.NotBefore.After(first.NotBefore) && !cur.NotAfter.After(first.NotAfter) {
				t.Errorf("the new certificate (%s..%s) is not newer than the first (%s..%s)", cur.NotBefore, cur.NotAfter, first.NotBefore, first.NotAfter)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no renewal within 60s:\n%s", g.Output())
		}
	}
	if !strings.Contains(g.Output(), "certificate renewed") {
		t.Errorf("the log does not say the certificate was renewed:\n%s", g.Output())
	}
}

// served is the leaf certificate the gateway presents for tlsDomain,
// verified against roots.
func served(roots *x509.CertPool, port int) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", "127.0.0.1:"+strconv.Itoa(port),
		&tls.Config{RootCAs: roots, ServerName: tlsDomain})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// writeSelfSigned writes a fresh self-signed certificate for tlsDomain and
// its key, and returns the certificate.
func writeSelfSigned(t *testing.T, certFile, keyFile string, serial int64) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: tlsDomain}, DNSNames: []string{tlsDomain},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

// The operator's own certificate files: served, and read again on SIGHUP
// when they were replaced (a renewal done by another tool).
func TestStaticCertificateReloadsOnSIGHUP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first := writeSelfSigned(t, certFile, keyFile, 1)
	cfg := strings.Replace(reloadConfig("1", "2"), `drain_timeout = "20s"`, fmt.Sprintf(`drain_timeout = "20s"
  tls {
    cert_file = %q
    key_file  = %q
  }`, certFile, keyFile), 1)
	g := testgw.Start(t, testgw.Options{Config: cfg})
	port, _ := strconv.Atoi(g.URL[strings.LastIndexByte(g.URL, ':')+1:])
	pool := func(c *x509.Certificate) *x509.CertPool { p := x509.NewCertPool(); p.AddCert(c); return p }
	if got, err := served(pool(first), port); err != nil || got.SerialNumber.Int64() != 1 {
		t.Fatalf("first certificate: %v %v", got, err)
	}
	second := writeSelfSigned(t, certFile, keyFile, 2)
	rewrite(t, g, cfg, "certificate files read again")
	if got, err := served(pool(second), port); err != nil || got.SerialNumber.Int64() != 2 {
		t.Fatalf("after SIGHUP: %v %v", got, err)
	}
	// A call over HTTPS, billed; the books are audited over HTTPS when the
	// test ends.
	g.Client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool(second), ServerName: tlsDomain}}}
	acct := g.Account("10")
	_, key := g.Key(acct, nil)
	req, _ := http.NewRequest("POST", g.URL+"/v1/chat/completions", strings.NewReader(chatBody("reload-chat", "over https", "")))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a call over HTTPS: %d", resp.StatusCode)
	}
}
