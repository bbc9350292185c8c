package console

import (
	"net/http"
	"net/url"

	"github.com/tollgate-gw/tollgate/core/apierr"
	"github.com/tollgate-gw/tollgate/core/users"
	"github.com/tollgate-gw/tollgate/store"
)

// The account's people (owners only): roles, removal, invitations.

type membersData struct {
	Users       []store.User
	Invitations []store.Invitation
	// Link is a new invitation's link, shown this once.
	Link    string
	Invites bool // sign-up allows invitations
	Roles   []string
}

func needOwner(v *visit) error {
	if !v.owner() {
		return apierr.New(apierr.PermissionDenied, "only the account's owners manage its members")
	}
	return nil
}

func (c *Console) membersData(r *http.Request, v *visit) (*membersData, error) {
	ctx := r.Context()
	d := &membersData{Invites: c.o.Users.Signup() != "closed", Roles: []string{store.RoleMember, store.RoleAdmin, store.RoleOwner}}
	var err error
	if d.Users, err = c.o.Store.ListUsers(ctx, v.User.AccountID); err != nil {
		return nil, err
	}
	if d.Invitations, err = c.o.Store.ListInvitations(ctx, v.User.AccountID); err != nil {
		return nil, err
	}
	return d, nil
}

func (c *Console) membersPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := needOwner(v); err != nil {
		return err
	}
	d, err := c.membersData(r, v)
	if err != nil {
		return err
	}
	return c.render(w, v, http.StatusOK, "members", "", view{Section: "members", Title: "Members", Data: d})
}

// invite makes an invitation link to the account.
func (c *Console) invite(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := needOwner(v); err != nil {
		return err
	}
	_, raw, err := c.o.Users.Invite(r.Context(), v.User.AccountID, r.PostFormValue("role"), r.PostFormValue("email"), v.User.ID)
	d, derr := c.membersData(r, v)
	if derr != nil {
		return derr
	}
	vw := view{Section: "members", Title: "Members", Data: d}
	status := http.StatusCreated
	if err != nil {
		e := apierr.As(err)
		if e.Status >= 500 {
			return err
		}
		status, vw.Problem = e.Status, sentence(e.Message)
	} else {
		path, _ := url.Parse(users.SignupPath(raw))
		d.Link = v.consoleBase() + path.String()
		vw.Notice = "Invitation made. Send this link to the person you invite: it is shown this once and works for 7 days."
	}
	return c.render(w, v, status, "members", "", vw)
}

// memberAction changes a member's role or removes them.
func (c *Console) memberAction(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := needOwner(v); err != nil {
		return err
	}
	ctx := r.Context()
	id := r.PathValue("id")
	switch r.PathValue("action") {
	case "role":
		if _, err := c.o.Users.SetRole(ctx, v.User.AccountID, id, r.PostFormValue("role")); err != nil {
			return err
		}
	case "remove":
		if err := c.o.Users.RemoveUser(ctx, v.User.AccountID, id); err != nil {
			return err
		}
		if id == v.User.ID {
			c.clearCookie(w, sessionCookie)
			c.redirect(w, r, Prefix+"signin")
			return nil
		}
	default:
		return store.ErrNotFound
	}
	c.redirect(w, r, Prefix+"members")
	return nil
}

func (c *Console) revokeInvitation(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := needOwner(v); err != nil {
		return err
	}
	ctx := r.Context()
	invs, err := c.o.Store.ListInvitations(ctx, v.User.AccountID)
	if err != nil {
		return err
	}
	for _, inv := range invs {
		if inv.ID == r.PathValue("id") {
			if err := c.o.Store.DeleteInvitation(ctx, inv.ID); err != nil {
				return err
			}
			c.redirect(w, r, Prefix+"members")
			return nil
		}
	}
	return store.ErrNotFound
}
