// Package console is the web console people sign into: sign-up and
// sign-in, the overview with its spend chart, keys (create, reveal,
// enable, delete, the logs toggle), the call-log site, the organization's
// agents, members, billing and the person's own settings. Pages are
// rendered on the server with html/template; htmx (partial updates) and
// uPlot (charts) are vendored under assets/ and embedded, so reading works
// without JavaScript and the binary needs no network.
//
// The console is a client of the gateway's services, never a second
// implementation: keys and agents through core/admin's operations, the
// log site through core/logsapi (the code /v1/logs* runs), people and
// sessions through core/users.
package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	_ "time/tzdata" // people's zones, on a host without a zone database

	"github.com/hashicorp/go-hclog"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/billing"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/logsapi"
	"github.com/tollgate-gw/tollgate/core/routes"
	"github.com/tollgate-gw/tollgate/core/users"
	"github.com/tollgate-gw/tollgate/store"
)

// Prefix is where the console is served.
const Prefix = "/console/"

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed assets
var assetFiles embed.FS

// Bases lists the knowledge bases an account may read (core/kb).
type Bases interface {
	ReadableBases(ctx context.Context, account string) ([]store.KnowledgeBase, error)
}

// Options are the console's dependencies.
type Options struct {
	Config *config.Config
	Store  store.Store
	Admin  *admin.Service
	Users  *users.Service
	// Logs is the logs API's handler: the log site reads through it.
	Logs  *logsapi.Handler
	Bases Bases
	// Billing takes card top-ups at the billing page; nil: none.
	Billing *billing.Service
	// Secret derives the CSRF tokens (from the master key, so every
	// instance of a shared store agrees).
	Secret []byte
	// Secure marks cookies Secure: the console is reached over HTTPS (TLS
	// on, or a public_url of https behind a proxy).
	Secure bool
	// BaseURL is the API's address as clients should write it (curl
	// examples): server.public_url; empty means the request's own host.
	BaseURL string
	// APIAddr, when BaseURL is empty, gives the API's address (the
	// console on a listener of its own); "" or nil: the request's host.
	APIAddr func() string
	// ConsoleURL is the console's own address in the links it hands out
	// (invitations), without /console/; empty means the request's host.
	ConsoleURL string
	Logger     hclog.Logger
	Now        func() time.Time
}

// Console serves the console's pages.
type Console struct {
	o     Options
	log   hclog.Logger
	now   func() time.Time
	mux   *routes.Mux
	pages map[string]*template.Template
	// assetVersion busts browser caches of the embedded assets.
	assetVersion string
}

// New builds the console and parses its templates.
func New(o Options) (*Console, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	c := &Console{o: o, log: o.Logger.Named("console"), now: o.Now, mux: routes.New()}
	var err error
	if c.pages, err = parsePages(); err != nil {
		return nil, err
	}
	c.assetVersion = assetsVersion()
	c.routes()
	return c, nil
}

// Routes is the console's route table: docs/reference.md is tested
// against it.
func (c *Console) Routes() *routes.Mux { return c.mux }

// page is a handler of a signed-in person.
type page func(w http.ResponseWriter, r *http.Request, v *visit) error

// anon is a handler of a page that needs no sign-in.
type anon func(w http.ResponseWriter, r *http.Request, v *visit) error

func (c *Console) routes() {
	m := c.mux
	m.HandleFunc("GET /console/assets/{name}", c.serveAsset)
	m.HandleFunc("GET /console/signin", c.public(c.signinPage))
	m.HandleFunc("POST /console/signin", c.public(c.signin))
	m.HandleFunc("GET /console/signup", c.public(c.signupPage))
	m.HandleFunc("POST /console/signup", c.public(c.signup))
	m.HandleFunc("POST /console/signout", c.signedIn(c.signout))

	m.HandleFunc("GET /console/{$}", c.signedIn(c.overview))
	m.HandleFunc("GET /console/keys", c.signedIn(c.keysPage))
	m.HandleFunc("POST /console/keys", c.signedIn(c.createKey))
	m.HandleFunc("GET /console/keys/{id}/reveal", c.signedIn(c.revealPage))
	m.HandleFunc("POST /console/keys/{id}/reveal", c.signedIn(c.reveal))
	m.HandleFunc("POST /console/keys/{id}/{action}", c.signedIn(c.keyAction))

	m.HandleFunc("GET /console/logs", c.signedIn(c.logsPage))
	m.HandleFunc("GET /console/logs/export.csv", c.signedIn(c.exportCSV))
	m.HandleFunc("GET /console/logs/{id}", c.signedIn(c.logEntry))

	m.HandleFunc("GET /console/agents", c.signedIn(c.agentsPage))
	m.HandleFunc("POST /console/agents", c.signedIn(c.createAgent))
	m.HandleFunc("GET /console/agents/{id}", c.signedIn(c.agentPage))
	m.HandleFunc("POST /console/agents/{id}", c.signedIn(c.updateAgent))
	m.HandleFunc("POST /console/agents/{id}/{action}", c.signedIn(c.agentAction))
	m.HandleFunc("POST /console/key-requests/{id}/{action}", c.signedIn(c.answerKeyRequest))

	m.HandleFunc("GET /console/members", c.signedIn(c.membersPage))
	m.HandleFunc("POST /console/members", c.signedIn(c.invite))
	m.HandleFunc("POST /console/members/{id}/{action}", c.signedIn(c.memberAction))
	m.HandleFunc("POST /console/invitations/{id}/revoke", c.signedIn(c.revokeInvitation))

	m.HandleFunc("GET /console/billing", c.signedIn(c.billingPage))
	m.HandleFunc("POST /console/billing/topup", c.signedIn(c.startTopUp))
	m.HandleFunc("GET /console/billing/price", c.signedIn(c.priceFragment))
	m.HandleFunc("GET /console/billing/cancel", c.signedIn(c.cancelTopUp))
	m.HandleFunc("GET /console/billing/receipt/{id}", c.signedIn(c.receipt))

	m.HandleFunc("GET /console/account", c.signedIn(c.accountPage))
	m.HandleFunc("POST /console/account/{action}", c.signedIn(c.accountAction))
}

// ServeHTTP serves the console: the security headers every answer
// carries, then the routes. /console without its slash is redirected.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	if r.URL.Path == "/console" || r.URL.Path == "/" {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	if _, pattern := c.mux.Handler(r); pattern == "" {
		c.errorPage(w, r, nil, http.StatusNotFound, "There is no such page in the console.")
		return
	}
	c.mux.ServeHTTP(w, r)
}

// visit is one request of the console: who is signed in, the CSRF token of
// their forms, their time zone.
type visit struct {
	User    store.User
	Session store.Session
	Account store.Account
	CSRF    string
	Zone    *time.Location
	Client  users.Client
	// Partial is an htmx request: answer the fragment it targets.
	Partial bool
	// Base is the API's address for examples; console the console's own.
	Base, console string
}

// consoleBase is the console's address for links handed out.
func (v *visit) consoleBase() string { return v.console }

func (v *visit) signedIn() bool { return v.User.ID != "" }
func (v *visit) owner() bool    { return v.User.Role == store.RoleOwner }

// orgAdmin runs the organization's agents: an owner or an admin.
func (v *visit) orgAdmin() bool { return v.owner() || v.User.Role == store.RoleAdmin }

const (
	sessionCookie = "tollgate_session"
	preCookie     = "tollgate_csrf"
	zoneCookie    = "tollgate_tz"
)

func (c *Console) newVisit(r *http.Request) *visit {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	own := scheme + "://" + r.Host
	v := &visit{Client: clientOf(r), Zone: time.UTC, Partial: r.Header.Get("HX-Request") == "true", Base: own, console: own}
	if c.o.BaseURL != "" {
		v.Base = c.o.BaseURL
	} else if c.o.APIAddr != nil {
		if a := c.o.APIAddr(); a != "" {
			v.Base = a
		}
	}
	if c.o.ConsoleURL != "" {
		v.console = c.o.ConsoleURL
	}
	return v
}

func clientOf(r *http.Request) users.Client {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return users.Client{Address: host, UserAgent: r.UserAgent()}
}

// signedIn wraps a page that needs a session: without one, a GET is sent
// to sign in (and back), anything else refused; a state change needs the
// session's CSRF token.
func (c *Console) signedIn(p page) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := c.newVisit(r)
		ck, _ := r.Cookie(sessionCookie)
		var raw string
		if ck != nil {
			raw = ck.Value
		}
		u, se, err := c.o.Users.Session(r.Context(), raw)
		if err != nil {
			if !errors.Is(err, users.ErrNoSession) {
				c.fail(w, r, v, err)
				return
			}
			c.clearCookie(w, sessionCookie)
			if r.Method == http.MethodGet {
				back := url.Values{"next": {r.URL.RequestURI()}}
				c.redirect(w, r, "/console/signin?"+back.Encode())
				return
			}
			c.errorPage(w, r, v, http.StatusUnauthorized, "Your session has ended. Sign in again, then repeat what you were doing.")
			return
		}
		v.User, v.Session = u, se
		v.CSRF = c.csrf("session", se.ID)
		if v.Account, err = c.o.Store.GetAccount(r.Context(), u.AccountID); err != nil {
			c.fail(w, r, v, err)
			return
		}
		v.Zone = c.zone(r, u)
		if !c.checkCSRF(w, r, v) {
			return
		}
		if err := p(w, r, v); err != nil {
			c.fail(w, r, v, err)
		}
	}
}

// public wraps a page anyone may open (sign-in, sign-up). Its forms carry
// a token bound to a cookie of their own, so another site cannot post
// them (login CSRF).
func (c *Console) public(p anon) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := c.newVisit(r)
		pre := ""
		if ck, err := r.Cookie(preCookie); err == nil && len(ck.Value) >= 32 {
			pre = ck.Value
		} else if r.Method == http.MethodGet {
			b := make([]byte, 24)
			_, _ = rand.Read(b)
			pre = base64.RawURLEncoding.EncodeToString(b)
			c.setCookie(w, preCookie, pre, 0)
		}
		v.CSRF = c.csrf("pre", pre)
		if pre == "" && r.Method != http.MethodGet {
			c.errorPage(w, r, v, http.StatusForbidden, "This form has expired. Reload the page and try again (the console needs cookies).")
			return
		}
		if !c.checkCSRF(w, r, v) {
			return
		}
		if err := p(w, r, v); err != nil {
			c.fail(w, r, v, err)
		}
	}
}

// csrf is the token of a session's (or a pre-session cookie's) forms:
// an HMAC of its id under the console's secret, so no store is needed and
// every instance computes the same.
func (c *Console) csrf(kind, id string) string {
	m := hmac.New(sha256.New, c.o.Secret)
	m.Write([]byte("tollgate console csrf\x00" + kind + "\x00" + id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF refuses a state change (any method but GET and HEAD) whose
// form field _csrf or header X-CSRF-Token is not the visit's token.
func (c *Console) checkCSRF(w http.ResponseWriter, r *http.Request, v *visit) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		got = r.PostFormValue("_csrf")
	}
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(v.CSRF)) != 1 {
		c.log.Warn("refused a console request without its CSRF token", "method", r.Method, "path", r.URL.Path, "address", v.Client.Address)
		c.errorPage(w, r, v, http.StatusForbidden,
			"This request did not carry the form's security token, so it was refused: it may come from another site. Reload the page and try again.")
		return false
	}
	return true
}

// zone is the person's time zone: their setting, else what their browser
// said (a cookie console.js sets), else UTC.
func (c *Console) zone(r *http.Request, u store.User) *time.Location {
	name := u.TimeZone
	if name == "" {
		if ck, err := r.Cookie(zoneCookie); err == nil {
			name, _ = url.QueryUnescape(ck.Value)
		}
	}
	if name != "" {
		if loc, err := time.LoadLocation(name); err == nil {
			return loc
		}
	}
	return time.UTC
}

func (c *Console) setCookie(w http.ResponseWriter, name, value string, maxAge time.Duration) {
	ck := &http.Cookie{Name: name, Value: value, Path: Prefix, HttpOnly: true, Secure: c.o.Secure, SameSite: http.SameSiteLaxMode}
	if maxAge > 0 {
		ck.MaxAge = int(maxAge / time.Second)
	}
	http.SetCookie(w, ck)
}

func (c *Console) clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true, Secure: c.o.Secure, SameSite: http.SameSiteLaxMode})
}

// redirect answers a form with 303, or tells htmx to go there.
func (c *Console) redirect(w http.ResponseWriter, r *http.Request, to string) {
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("HX-Redirect", to)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// localPath keeps a next= target inside the console.
func localPath(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return Prefix
	}
	return next
}

// fail renders err: a client error's message with its status, anything
// else a 500 whose cause goes to the log only.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, v *visit, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		c.errorPage(w, r, v, http.StatusNotFound, "There is no such thing in your account (it may have been deleted).")
		return
	case errors.Is(err, context.Canceled):
		return
	}
	e := apierr.As(err)
	if e.Status >= 500 {
		c.log.Error("console page failed", "path", r.URL.Path, "error", err)
		c.errorPage(w, r, v, http.StatusInternalServerError, "Something went wrong on the gateway. Try again; if it keeps failing, tell its operator.")
		return
	}
	if ra := e.Header.Get("Retry-After"); ra != "" {
		w.Header().Set("Retry-After", ra)
	}
	c.errorPage(w, r, v, e.Status, sentence(e.Message))
}

// sentence capitalises a service's message and ends it with a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

func (c *Console) serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	b, err := fs.ReadFile(assetFiles, "assets/"+name)
	if err != nil || strings.HasPrefix(name, "LICENSE") {
		http.NotFound(w, r)
		return
	}
	switch {
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(name, ".svg"):
		w.Header().Set("Content-Type", "image/svg+xml")
	}
	if r.URL.Query().Get("v") == c.assetVersion {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	_, _ = w.Write(b)
}

// assetsVersion is a digest of the embedded assets.
func assetsVersion() string {
	h := sha256.New()
	_ = fs.WalkDir(assetFiles, "assets", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(assetFiles, path)
			h.Write([]byte(path))
			h.Write(b)
		}
		return nil
	})
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:12]
}
