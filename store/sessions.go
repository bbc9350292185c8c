package store

import (
	"context"
	"time"
)

// Session is one console sign-in. The cookie carries a random token; the
// store keeps only its SHA-256 (ID), so a copy of the database signs no
// one in. Every instance of a shared store sees every session.
type Session struct {
	// ID is the hex SHA-256 of the session's token.
	ID        string    `json:"id"`
	UserID    string    `json:"user_id"`
	AccountID string    `json:"account_id"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt ends the session, however it is used.
	ExpiresAt time.Time `json:"expires_at"`
	// Address and UserAgent are where it was signed in from (shown to
	// the person).
	Address   string `json:"address,omitempty"`
	UserAgent string `json:"user_agent,omitempty"`
}

// SignInFailures counts the failed sign-ins of one subject (an address,
// an account) in the window that started at Since.
type SignInFailures struct {
	Count int
	Since time.Time
}

// Sessions is the role of console sessions and of the failed sign-ins
// that throttle them.
type Sessions interface {
	// CreateSession stores a session (ErrExists for a taken id).
	CreateSession(ctx context.Context, s Session) error
	// GetSession reads a session, expired or not: the caller checks
	// ExpiresAt.
	GetSession(ctx context.Context, id string) (Session, error)
	// ListSessions lists a user's sessions, oldest first.
	ListSessions(ctx context.Context, userID string) ([]Session, error)
	DeleteSession(ctx context.Context, id string) error
	// DeleteUserSessions ends every session of a user (sign-out
	// everywhere) and says how many there were.
	DeleteUserSessions(ctx context.Context, userID string) (int, error)
	// DeleteExpiredSessions removes the sessions expired at at.
	DeleteExpiredSessions(ctx context.Context, at time.Time) (int, error)

	// FailSignIn counts one failed sign-in of subject at at, in a fixed
	// window of length window: a window that started before at-window
	// starts afresh at at. It returns the window's count, this one
	// included; concurrent failures each count once.
	FailSignIn(ctx context.Context, subject string, at time.Time, window time.Duration) (SignInFailures, error)
	// SignInFailuresOf reads subject's failures in the window running at
	// at (a zero count when none or when it has ended).
	SignInFailuresOf(ctx context.Context, subject string, at time.Time, window time.Duration) (SignInFailures, error)
	// ClearSignInFailures forgets subject's failures (a sign-in that
	// passed).
	ClearSignInFailures(ctx context.Context, subject string) error
}
