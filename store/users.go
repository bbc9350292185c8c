package store

import (
	"context"
	"time"
)

// Roles of a person in an account (the console).
const (
	// RoleOwner may do everything: every key and log of the account,
	// its members, its agents, its billing.
	RoleOwner = "owner"
	// RoleMember sees and manages their own keys and their calls only.
	RoleMember = "member"
	// RoleAdmin is a member who also runs the organization's agents:
	// agents, agent keys and key requests.
	RoleAdmin = "admin"
)

// ValidRole reports whether r is one of the roles.
func ValidRole(r string) bool { return r == RoleOwner || r == RoleMember || r == RoleAdmin }

// User is a person who signs into the console, a member of one account.
type User struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	// Email is unique across the gateway. The store compares it exactly:
	// callers fold it (lower case, trimmed) before storing or looking up.
	Email string `json:"email"`
	// PasswordHash is the password's argon2id hash in PHC string form;
	// the password itself is never stored.
	PasswordHash string `json:"password_hash"`
	Role         string `json:"role"`
	// TimeZone is the IANA zone the console shows times in; "" lets the
	// browser say.
	TimeZone  string    `json:"time_zone,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Invitation lets whoever holds its link join an account with a role.
// The link carries a random token; the store keeps only its SHA-256 (ID).
type Invitation struct {
	// ID is the hex SHA-256 of the invitation's token.
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	Role      string `json:"role"`
	// Email, when set, is the only address that may accept it (folded).
	Email string `json:"email,omitempty"`
	// CreatedBy is the user who invited; "" for the operator.
	CreatedBy string    `json:"created_by,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Users is the role of the people who sign into the console, and of the
// invitations that let people join an account.
type Users interface {
	// CreateUser stores a new user of an existing account: ErrExists for
	// a taken id or email, ErrNotFound for an unknown account.
	CreateUser(ctx context.Context, u User) error
	GetUser(ctx context.Context, id string) (User, error)
	// UserByEmail finds a user by (folded) email.
	UserByEmail(ctx context.Context, email string) (User, error)
	// ListUsers lists an account's users, oldest first.
	ListUsers(ctx context.Context, accountID string) ([]User, error)
	// UpdateUser replaces an existing user; its account, email and
	// CreatedAt stay.
	UpdateUser(ctx context.Context, u User) error
	// DeleteUser removes a user and ends their sessions, in one step.
	DeleteUser(ctx context.Context, id string) error

	// CreateInvitation stores an invitation to an existing account
	// (ErrNotFound otherwise; ErrExists for a taken id).
	CreateInvitation(ctx context.Context, inv Invitation) error
	// ListInvitations lists an account's invitations not yet accepted,
	// expired ones included, oldest first.
	ListInvitations(ctx context.Context, accountID string) ([]Invitation, error)
	DeleteInvitation(ctx context.Context, id string) error
	// AcceptInvitation creates u in the invitation's account with its role
	// and removes the invitation, in one step: ErrNotFound when the
	// invitation is unknown, used, expired at at, or for another email
	// than u's; ErrExists when u's
	// email or id is taken (the invitation then stays). It returns the
	// invitation, and u as stored.
	AcceptInvitation(ctx context.Context, id string, u User, at time.Time) (Invitation, User, error)
}
