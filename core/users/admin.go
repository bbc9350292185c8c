package users

import (
	"net/http"
	"time"

	"github.com/tollgate-gw/tollgate/core/admin"
	"github.com/tollgate-gw/tollgate/store"
)

// AdminRoute is an operator's route, mounted on the admin API behind its
// token.
type AdminRoute = admin.Route

// AdminRoutes are the operator's routes for people: add one to an
// account (`tollgate admin user create`), list them, remove one, invite.
func (s *Service) AdminRoutes() []AdminRoute {
	return []AdminRoute{
		{Pattern: "POST /admin/v1/accounts/{id}/users", Handler: s.adminCreate},
		{Pattern: "GET /admin/v1/accounts/{id}/users", Handler: s.adminList},
		{Pattern: "DELETE /admin/v1/users/{id}", Handler: s.adminDelete},
		{Pattern: "POST /admin/v1/accounts/{id}/invitations", Handler: s.adminInvite},
	}
}

// userView is a user's JSON: never the password's hash.
type userView struct {
	ID        string    `json:"id"`
	Object    string    `json:"object"`
	AccountID string    `json:"account_id"`
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

func userJSON(u store.User) userView {
	return userView{ID: u.ID, Object: "user", AccountID: u.AccountID, Email: u.Email, Role: u.Role, CreatedAt: u.CreatedAt}
}

func (s *Service) adminCreate(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Email    string `json:"email"`
		Password string `json:"password"`
		Role     string `json:"role"`
	}
	if err := admin.Decode(r, &body); err != nil {
		admin.Fail(w, err)
		return
	}
	if body.Role == "" {
		body.Role = store.RoleOwner
	}
	if _, err := s.st.GetAccount(r.Context(), r.PathValue("id")); err != nil {
		admin.Fail(w, err)
		return
	}
	u, err := s.CreateUser(r.Context(), r.PathValue("id"), body.Email, body.Password, body.Role)
	if err != nil {
		admin.Fail(w, err)
		return
	}
	admin.Reply(w, http.StatusCreated, userJSON(u))
}

func (s *Service) adminList(w http.ResponseWriter, r *http.Request) {
	if _, err := s.st.GetAccount(r.Context(), r.PathValue("id")); err != nil {
		admin.Fail(w, err)
		return
	}
	us, err := s.st.ListUsers(r.Context(), r.PathValue("id"))
	if err != nil {
		admin.Fail(w, err)
		return
	}
	out := make([]userView, 0, len(us))
	for _, u := range us {
		out = append(out, userJSON(u))
	}
	admin.Reply(w, http.StatusOK, map[string]any{"object": "list", "data": out})
}

// adminDelete removes a person whatever their role: the operator may take
// an account's last owner away (and add another with create).
func (s *Service) adminDelete(w http.ResponseWriter, r *http.Request) {
	if err := s.st.DeleteUser(r.Context(), r.PathValue("id")); err != nil {
		admin.Fail(w, err)
		return
	}
	admin.Reply(w, http.StatusOK, map[string]any{"id": r.PathValue("id"), "object": "user", "deleted": true})
}

func (s *Service) adminInvite(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Role  string `json:"role"`
		Email string `json:"email"`
	}
	if err := admin.Decode(r, &body); err != nil {
		admin.Fail(w, err)
		return
	}
	if body.Role == "" {
		body.Role = store.RoleOwner
	}
	inv, raw, err := s.Invite(r.Context(), r.PathValue("id"), body.Role, body.Email, "")
	if err != nil {
		admin.Fail(w, err)
		return
	}
	admin.Reply(w, http.StatusCreated, map[string]any{
		"id": inv.ID, "object": "invitation", "account_id": inv.AccountID, "role": inv.Role,
		"email": nullable(inv.Email), "expires_at": inv.ExpiresAt, "token": raw,
		"path": SignupPath(raw),
	})
}

// SignupPath is the console path an invitation's link opens.
func SignupPath(raw string) string { return "/console/signup?invitation=" + raw }

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
