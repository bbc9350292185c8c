package store

import (
	"context"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
)

// Key kinds.
const (
	KindConsole  = "console"
	KindEmployee = "employee" // enterprise-issued employee key
	KindDesktop  = "desktop"  // compute-package or desktop credential
	KindAgent    = "agent"
)

// Key is an API key. The raw key is never stored in clear: Hash is the
// SHA-256 of the raw key (the lookup index) and Sealed its AES-256-GCM
// ciphertext (nil for hash-only keys, which cannot be revealed).
type Key struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	Prefix    string `json:"prefix"` // leading characters of the raw key, for display
	Hash      []byte `json:"hash"`
	Sealed    []byte `json:"sealed,omitempty"`
	// AllowedModels applies only when RestrictModels is true; an empty list
	// then denies every model. RestrictModels false is the spec's null.
	RestrictModels   bool       `json:"restrict_models"`
	AllowedModels    []string   `json:"allowed_models,omitempty"`
	ExpiresAt        *time.Time `json:"expires_at,omitempty"`
	Enabled          bool       `json:"enabled"`
	LogsAccountScope bool       `json:"logs_account_scope"`
	Kind             string     `json:"kind"`
	CreatedAt        time.Time  `json:"created_at"`
	LastUsedAt       *time.Time `json:"last_used_at,omitempty"`
	// AgentID binds a key of kind agent to its agent (store.Agents).
	AgentID string `json:"agent_id,omitempty"`
	// SpendCap bounds what the key may spend over its life (nil: no cap);
	// PlaceHold enforces it against KeyUsage and the key's open holds.
	SpendCap *money.Nano `json:"spend_cap,omitempty"`
	// UserID is the console user the key belongs to: a member sees and
	// manages only their own keys. Empty for a key the operator made.
	UserID string `json:"user_id,omitempty"`
}

// Keys is the role of API keys.
type Keys interface {
	CreateKey(ctx context.Context, k Key) error
	GetKey(ctx context.Context, id string) (Key, error)
	// KeyByHash is the authentication lookup.
	KeyByHash(ctx context.Context, hash []byte) (Key, error)
	ListKeys(ctx context.Context, accountID string) ([]Key, error)
	UpdateKey(ctx context.Context, k Key) error
	DeleteKey(ctx context.Context, id string) error
	// KeyUsage is the total charged to one key over its life.
	KeyUsage(ctx context.Context, keyID string) (money.Nano, error)
	// TouchKey records when a key was last used; GetKey and ListKeys
	// report it as LastUsedAt. An unknown key is ErrNotFound.
	TouchKey(ctx context.Context, keyID string, at time.Time) error
}
