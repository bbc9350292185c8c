package console

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/keys"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// keyRow is a key as the keys page lists it.
type keyRow struct {
	store.Key
	Spent      money.Nano
	Owner      string // the email of the person it belongs to, for owners
	Revealable bool
	KindName   string
	Manage     bool // the visitor may toggle its logs scope (owners)
}

// keysData is the keys page.
type keysData struct {
	Keys    []keyRow
	Models  []modelChoice
	Expiry  []expiryChoice
	Created *createdKey
	Form    keyForm
}

type modelChoice struct{ ID, Family string }

type expiryChoice struct{ ID, Label string }

var expiries = []expiryChoice{{"never", "Never"}, {"7d", "In 7 days"}, {"30d", "In 30 days"}, {"90d", "In 90 days"},
	{"365d", "In a year"}, {"date", "On a date…"}}

// createdKey is a key just made: its raw value is shown this once.
type createdKey struct {
	Key store.Key
	Raw string
}

// keyForm is the create form as sent, kept when it is refused.
type keyForm struct {
	Name      string
	AllModels bool
	Models    []string
	Expiry    string
	Date      string
	LogsScope bool
}

func (c *Console) keysData(r *http.Request, v *visit) (*keysData, error) {
	ctx := r.Context()
	ks, err := c.ownKeys(ctx, v)
	if err != nil {
		return nil, err
	}
	emails := map[string]string{}
	if v.owner() {
		us, err := c.o.Store.ListUsers(ctx, v.User.AccountID)
		if err != nil {
			return nil, err
		}
		for _, u := range us {
			emails[u.ID] = u.Email
		}
	}
	d := &keysData{Expiry: expiries, Form: keyForm{AllModels: true, Expiry: "never"}}
	for _, k := range ks {
		row, err := c.keyRow(r, v, k, emails)
		if err != nil {
			return nil, err
		}
		d.Keys = append(d.Keys, row)
	}
	for _, m := range c.o.Config.Models {
		d.Models = append(d.Models, modelChoice{ID: m.ID, Family: m.Family})
	}
	return d, nil
}

func (c *Console) keyRow(r *http.Request, v *visit, k store.Key, emails map[string]string) (keyRow, error) {
	spent, err := c.o.Store.KeyUsage(r.Context(), k.ID)
	if err != nil {
		return keyRow{}, err
	}
	owner := emails[k.UserID]
	if owner == "" && k.UserID == "" {
		owner = "operator"
	}
	return keyRow{Key: k, Spent: spent, Owner: owner, Revealable: len(k.Sealed) > 0, KindName: keyKindName(k.Kind),
		Manage: v.owner()}, nil
}

func (c *Console) keysPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	d, err := c.keysData(r, v)
	if err != nil {
		return err
	}
	return c.render(w, v, http.StatusOK, "keys", "", view{Section: "keys", Title: "Keys", Data: d, Back: Prefix + "keys"})
}

// createKey makes a key of the visitor, through the admin API's
// operation; its raw value is shown once, on the answer's page.
func (c *Console) createKey(w http.ResponseWriter, r *http.Request, v *visit) error {
	f := keyForm{
		Name: strings.TrimSpace(r.PostFormValue("name")), AllModels: r.PostFormValue("models") != "only",
		Models: r.PostForm["model"], Expiry: r.PostFormValue("expiry"), Date: r.PostFormValue("expires_on"),
		LogsScope: r.PostFormValue("logs_scope") == "on",
	}
	spec := admin.KeySpec{Name: &f.Name, UserID: v.User.ID}
	if !f.AllModels {
		restrict := true
		known := map[string]bool{}
		for _, m := range c.o.Config.Models {
			known[m.ID] = true
		}
		for _, m := range f.Models {
			if !known[m] {
				return c.keyProblem(w, r, v, f, apierr.Newf(apierr.InvalidRequest, "%q is not a model of this gateway", m))
			}
		}
		spec.RestrictModels, spec.AllowedModels = &restrict, &f.Models
	}
	exp, err := expiryOf(f, v.Zone, c.now())
	if err != nil {
		return c.keyProblem(w, r, v, f, err)
	}
	spec.ExpiresAt = &exp
	if f.LogsScope && v.owner() {
		spec.LogsAccountScope = &f.LogsScope
	}
	k, raw, err := c.o.Admin.CreateKey(r.Context(), v.User.AccountID, spec)
	if err != nil {
		return c.keyProblem(w, r, v, f, err)
	}
	d, err := c.keysData(r, v)
	if err != nil {
		return err
	}
	d.Created = &createdKey{Key: k, Raw: raw}
	return c.render(w, v, http.StatusCreated, "keys", "", view{Section: "keys", Title: "Keys", Data: d, Back: Prefix + "keys",
		Notice: "Key “" + k.Name + "” created. Copy it now: it is shown this once (you can reveal it again later with your password)."})
}

// expiryOf is the form's expiry: nil for never; a date is the end of
// that day in the person's zone.
func expiryOf(f keyForm, loc *time.Location, now time.Time) (*time.Time, error) {
	var t time.Time
	switch f.Expiry {
	case "", "never":
		return nil, nil
	case "7d":
		t = now.AddDate(0, 0, 7)
	case "30d":
		t = now.AddDate(0, 0, 30)
	case "90d":
		t = now.AddDate(0, 0, 90)
	case "365d":
		t = now.AddDate(1, 0, 0)
	case "date":
		d, err := time.ParseInLocation("2006-01-02", f.Date, loc)
		if err != nil {
			return nil, apierr.New(apierr.InvalidRequest, "pick the expiry date")
		}
		t = d.AddDate(0, 0, 1)
		if !t.After(now) {
			return nil, apierr.New(apierr.InvalidRequest, "the expiry date has passed; pick a later one")
		}
	default:
		return nil, apierr.Newf(apierr.InvalidRequest, "unknown expiry %q", f.Expiry)
	}
	t = t.UTC()
	return &t, nil
}

func (c *Console) keyProblem(w http.ResponseWriter, r *http.Request, v *visit, f keyForm, err error) error {
	e := apierr.As(err)
	if e.Status >= 500 {
		return err
	}
	d, derr := c.keysData(r, v)
	if derr != nil {
		return derr
	}
	d.Form = f
	return c.render(w, v, e.Status, "keys", "", view{Section: "keys", Title: "Keys", Data: d, Back: Prefix + "keys",
		Problem: sentence(e.Message)})
}

// keyAction enables, disables or deletes a key, or turns its account-wide
// logs toggle on or off (owners only), through the admin API's
// operations. An htmx request gets the key's row back.
func (c *Console) keyAction(w http.ResponseWriter, r *http.Request, v *visit) error {
	ctx := r.Context()
	k, err := c.keyOf(ctx, v, r.PathValue("id"))
	if err != nil {
		return err
	}
	on, off := true, false
	var spec admin.KeySpec
	switch r.PathValue("action") {
	case "enable":
		spec.Enabled = &on
	case "disable":
		spec.Enabled = &off
	case "logs-scope":
		if !v.owner() {
			return apierr.New(apierr.PermissionDenied, "only an account's owners may let a key read the whole account's calls")
		}
		if k.Kind == store.KindEmployee || k.Kind == store.KindDesktop || k.Kind == store.KindAgent {
			return apierr.Newf(apierr.InvalidRequest, "a key of kind %s never reads the whole account's calls", k.Kind)
		}
		to := r.PostFormValue("on") == "true"
		spec.LogsAccountScope = &to
	case "delete":
		if err := c.o.Admin.DeleteKey(ctx, k.ID); err != nil {
			return err
		}
		if v.Partial {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusOK) // htmx swaps the row for nothing
			return nil
		}
		c.redirect(w, r, backTo(r, Prefix+"keys"))
		return nil
	default:
		return store.ErrNotFound
	}
	k, err = c.o.Admin.UpdateKey(ctx, k.ID, spec)
	if err != nil {
		return err
	}
	if !v.Partial {
		c.redirect(w, r, backTo(r, Prefix+"keys"))
		return nil
	}
	emails := map[string]string{}
	if u, err := c.o.Store.GetUser(ctx, k.UserID); err == nil {
		emails[u.ID] = u.Email
	}
	row, err := c.keyRow(r, v, k, emails)
	if err != nil {
		return err
	}
	return c.render(w, v, http.StatusOK, "keys", "key-row-fragment", view{Section: "keys", Data: row, Back: backTo(r, Prefix+"keys")})
}

// backTo is the form's back field when it stays in the console.
func backTo(r *http.Request, fallback string) string {
	if b := r.PostFormValue("back"); strings.HasPrefix(b, Prefix) && !strings.HasPrefix(b, "//") {
		return localPath(b)
	}
	return fallback
}

// revealData is the reveal page.
type revealData struct {
	Key store.Key
	Raw string
}

func (c *Console) revealPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	k, err := c.keyOf(r.Context(), v, r.PathValue("id"))
	if err != nil {
		return err
	}
	vw := view{Section: "keys", Title: "Reveal " + k.Name, Data: revealData{Key: k}}
	if len(k.Sealed) == 0 {
		vw.Problem = "This key was stored hash-only and cannot be revealed. Create a new key and delete this one if you lost it."
	}
	return c.render(w, v, http.StatusOK, "reveal", "", vw)
}

// reveal shows a key's raw value after the person types their password
// again.
func (c *Console) reveal(w http.ResponseWriter, r *http.Request, v *visit) error {
	ctx := r.Context()
	k, err := c.keyOf(ctx, v, r.PathValue("id"))
	if err != nil {
		return err
	}
	vw := view{Section: "keys", Title: "Reveal " + k.Name, Data: revealData{Key: k}}
	if err := c.o.Users.ConfirmPassword(ctx, v.User, r.PostFormValue("password"), v.Client); err != nil {
		e := apierr.As(err)
		if e.Status >= 500 {
			return err
		}
		if ra := e.Header.Get("Retry-After"); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		vw.Problem = sentence(e.Message)
		return c.render(w, v, e.Status, "reveal", "", vw)
	}
	raw, err := c.o.Admin.Reveal(ctx, k.ID)
	if errors.Is(err, keys.ErrNotRevealable) {
		vw.Problem = sentence(err.Error())
		return c.render(w, v, http.StatusConflict, "reveal", "", vw)
	}
	if err != nil {
		return err
	}
	c.log.Info("key revealed", "key", k.ID, "user", v.User.ID)
	vw.Data = revealData{Key: k, Raw: raw}
	return c.render(w, v, http.StatusOK, "reveal", "", vw)
}
