package console

import (
	"net/http"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/config"
	"github.com/tollgate-gw/tollgate/core/users"
)

// authForm is what the sign-in and sign-up pages show and keep.
type authForm struct {
	Email, Next, Invitation string
	Signup                  string
}

func (c *Console) signinPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	if c.alreadySignedIn(w, r) {
		return nil
	}
	f := authForm{Email: r.URL.Query().Get("email"), Next: localPath(r.URL.Query().Get("next")), Signup: c.o.Users.Signup()}
	vw := view{Title: "Sign in", Data: f}
	if r.URL.Query().Get("signed_out") != "" {
		vw.Notice = "You are signed out."
	}
	return c.render(w, v, http.StatusOK, "signin", "", vw)
}

// alreadySignedIn sends a person with a live session to the overview.
func (c *Console) alreadySignedIn(w http.ResponseWriter, r *http.Request) bool {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	if _, _, err := c.o.Users.Session(r.Context(), ck.Value); err != nil {
		return false
	}
	c.redirect(w, r, Prefix)
	return true
}

func (c *Console) signin(w http.ResponseWriter, r *http.Request, v *visit) error {
	f := authForm{Email: r.PostFormValue("email"), Next: localPath(r.PostFormValue("next")), Signup: c.o.Users.Signup()}
	s, err := c.o.Users.SignIn(r.Context(), f.Email, r.PostFormValue("password"), v.Client)
	if err != nil {
		return c.authProblem(w, r, v, "signin", "Sign in", f, err)
	}
	c.startSession(w, s)
	c.redirect(w, r, f.Next)
	return nil
}

// authProblem shows the form again with what was wrong; faults are
// rendered by fail.
func (c *Console) authProblem(w http.ResponseWriter, r *http.Request, v *visit, page, title string, f authForm, err error) error {
	e := apierr.As(err)
	if e.Status >= 500 {
		return err
	}
	if ra := e.Header.Get("Retry-After"); ra != "" {
		w.Header().Set("Retry-After", ra)
	}
	return c.render(w, v, e.Status, page, "", view{Title: title, Data: f, Problem: sentence(e.Message)})
}

func (c *Console) startSession(w http.ResponseWriter, s users.Signed) {
	c.setCookie(w, sessionCookie, s.Token, s.Session.ExpiresAt.Sub(s.Session.CreatedAt))
}

func (c *Console) signupPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	f := authForm{Invitation: r.URL.Query().Get("invitation"), Email: r.URL.Query().Get("email"), Signup: c.o.Users.Signup()}
	vw := view{Title: "Sign up", Data: f}
	status := http.StatusOK
	switch {
	case f.Signup == config.SignupClosed:
		vw.Problem, status = "Sign-up is closed on this gateway: its operator adds people. Ask them for an account.", http.StatusForbidden
	case f.Signup == config.SignupInvite && f.Invitation == "":
		vw.Problem, status = "Sign-up on this gateway needs an invitation: ask an account's owner for an invitation link.", http.StatusForbidden
	}
	return c.render(w, v, status, "signup", "", vw)
}

func (c *Console) signup(w http.ResponseWriter, r *http.Request, v *visit) error {
	f := authForm{Email: r.PostFormValue("email"), Invitation: r.PostFormValue("invitation"), Signup: c.o.Users.Signup()}
	if pw := r.PostFormValue("password"); pw != r.PostFormValue("password2") {
		return c.render(w, v, http.StatusBadRequest, "signup", "", view{Title: "Sign up", Data: f,
			Problem: "The two passwords differ; type the same one twice."})
	}
	s, err := c.o.Users.SignUp(r.Context(), f.Email, r.PostFormValue("password"), f.Invitation, v.Client)
	if err != nil {
		return c.authProblem(w, r, v, "signup", "Sign up", f, err)
	}
	c.startSession(w, s)
	c.redirect(w, r, Prefix+"?welcome=1")
	return nil
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := c.o.Users.SignOut(r.Context(), v.Session); err != nil {
		return err
	}
	c.clearCookie(w, sessionCookie)
	c.redirect(w, r, Prefix+"signin?signed_out=1")
	return nil
}
