package console

import (
	"net/http"
	"strconv"

	"github.com/tollgate-gw/tollgate/store"
)

// The person's own settings: time zone, password, sessions.

type accountData struct {
	Sessions []store.Session
	Current  string
	Zones    []string
}

// commonZones are offered first; any IANA name may be typed.
var commonZones = []string{"UTC", "America/Los_Angeles", "America/New_York", "America/Sao_Paulo", "Europe/London",
	"Europe/Paris", "Europe/Berlin", "Africa/Lagos", "Asia/Dubai", "Asia/Kolkata", "Asia/Shanghai", "Asia/Tokyo",
	"Australia/Sydney"}

func (c *Console) accountPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	return c.accountAnswer(w, r, v, http.StatusOK, "", "")
}

func (c *Console) accountAnswer(w http.ResponseWriter, r *http.Request, v *visit, status int, notice, problem string) error {
	ss, err := c.o.Store.ListSessions(r.Context(), v.User.ID)
	if err != nil {
		return err
	}
	return c.render(w, v, status, "account", "", view{Section: "account", Title: "Account", Notice: notice, Problem: problem,
		Data: accountData{Sessions: ss, Current: v.Session.ID, Zones: commonZones}})
}

// accountAction changes the person's time zone or password, or signs
// them out everywhere.
func (c *Console) accountAction(w http.ResponseWriter, r *http.Request, v *visit) error {
	ctx := r.Context()
	switch r.PathValue("action") {
	case "timezone":
		u, err := c.o.Users.SetTimeZone(ctx, v.User, r.PostFormValue("zone"))
		if err != nil {
			return err
		}
		v.User = u
		v.Zone = c.zone(r, u)
		return c.accountAnswer(w, r, v, http.StatusOK, "Times are now shown in "+v.Zone.String()+".", "")
	case "password":
		if r.PostFormValue("new") != r.PostFormValue("new2") {
			return c.accountAnswer(w, r, v, http.StatusBadRequest, "", "The two new passwords differ; type the same one twice.")
		}
		s, err := c.o.Users.ChangePassword(ctx, v.User, r.PostFormValue("current"), r.PostFormValue("new"), v.Client)
		if err != nil {
			return err
		}
		c.startSession(w, s)
		v.Session, v.CSRF = s.Session, c.csrf("session", s.Session.ID)
		return c.accountAnswer(w, r, v, http.StatusOK, "Password changed. Every other session was signed out.", "")
	case "signout-everywhere":
		n, err := c.o.Users.SignOutEverywhere(ctx, v.User)
		if err != nil {
			return err
		}
		c.clearCookie(w, sessionCookie)
		c.redirect(w, r, Prefix+"signin?signed_out="+strconv.Itoa(n))
		return nil
	}
	return store.ErrNotFound
}
