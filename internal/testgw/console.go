package testgw

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
)

// ConsoleClient is a person's browser without JavaScript on the web
// console: it keeps cookies and the CSRF token of the last form it saw,
// and does not follow redirects (tests look at them).
type ConsoleClient struct {
	Base string
	HTTP *http.Client
	CSRF string
}

// NewConsoleClient returns a client of the console at base (the gateway's
// address, or the console's own listener's).
func NewConsoleClient(base string) *ConsoleClient {
	jar, _ := cookiejar.New(nil)
	return &ConsoleClient{Base: strings.TrimRight(base, "/"), HTTP: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// Get fetches a page and remembers its form's CSRF token.
func (c *ConsoleClient) Get(path string) (int, string, error) {
	resp, err := c.HTTP.Get(c.Base + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if m := csrfField.FindSubmatch(b); m != nil {
		c.CSRF = html.UnescapeString(string(m[1]))
	}
	return resp.StatusCode, string(b), err
}

// Post sends a form with the remembered CSRF token (unless form has one),
// and remembers the token of the page it answers with.
func (c *ConsoleClient) Post(path string, form url.Values) (int, string, http.Header, error) {
	if form == nil {
		form = url.Values{}
	}
	if !form.Has("_csrf") {
		form.Set("_csrf", c.CSRF)
	}
	resp, err := c.HTTP.PostForm(c.Base+path, form)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if m := csrfField.FindSubmatch(b); m != nil {
		c.CSRF = html.UnescapeString(string(m[1]))
	}
	return resp.StatusCode, string(b), resp.Header, err
}

// SignUp signs up (with an invitation's token when not empty).
func (c *ConsoleClient) SignUp(email, password, invitation string) error {
	q := ""
	if invitation != "" {
		q = "?invitation=" + url.QueryEscape(invitation)
	}
	if _, _, err := c.Get("/console/signup" + q); err != nil {
		return err
	}
	return c.expectRedirect(c.Post("/console/signup", url.Values{"email": {email}, "password": {password},
		"password2": {password}, "invitation": {invitation}}))
}

// SignIn signs in.
func (c *ConsoleClient) SignIn(email, password string) error {
	if _, _, err := c.Get("/console/signin"); err != nil {
		return err
	}
	return c.expectRedirect(c.Post("/console/signin", url.Values{"email": {email}, "password": {password}}))
}

func (c *ConsoleClient) expectRedirect(status int, body string, _ http.Header, err error) error {
	if err != nil {
		return err
	}
	if status != http.StatusSeeOther {
		return fmt.Errorf("status %d: %s", status, body)
	}
	return nil
}
