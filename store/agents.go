package store

import (
	"context"
	"errors"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
)

// Agent is an organization's agent (PRODUCT.md §2 Agents, the spec's Agent
// interface): what the agent stage applies to every call of its keys. An
// account is an organization.
type Agent struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	// SystemPrompt is the first system message of every call; it binds.
	SystemPrompt string `json:"system_prompt"`
	// Model is the locked model: the body's model is ignored.
	Model string `json:"model"`
	// Temperature applies unless the client sets one; nil: none.
	Temperature *float64 `json:"temperature"`
	// KnowledgeBases are the kb ids searched once per call.
	KnowledgeBases  []string  `json:"knowledge_bases"`
	WebSearch       bool      `json:"web_search"`
	ImageGeneration bool      `json:"image_generation"`
	Published       bool      `json:"published"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
	// DeletedAt is set once the agent is deleted. Agents are soft-deleted,
	// so their keys answer 403, not 401 (errors rule 10).
	DeletedAt *time.Time `json:"deleted_at,omitempty"`
}

// Key request statuses.
const (
	KeyRequestPending  = "pending"
	KeyRequestApproved = "approved"
	KeyRequestRejected = "rejected"
)

// KeyRequest is an employee's request for a key of an agent, answered by
// an admin (PRODUCT.md §2).
type KeyRequest struct {
	ID        string `json:"id"`
	AccountID string `json:"account_id"`
	AgentID   string `json:"agent_id"`
	Requester string `json:"requester"`
	Note      string `json:"note"`
	Status    string `json:"status"`
	// KeyID is the key issued on approval.
	KeyID     string     `json:"key_id,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
}

// Organization is an account's policy for its agents: the organization
// allowlist an agent's locked model is checked against. RestrictModels
// false is every model (the API's null); true with an empty list, none.
type Organization struct {
	AccountID      string   `json:"account_id"`
	RestrictModels bool     `json:"restrict_models"`
	AllowedModels  []string `json:"allowed_models,omitempty"`
}

// ErrDecided refuses an answer to a key request that is no longer pending.
var ErrDecided = errors.New("store: the key request was already answered")

// ErrSpendCap refuses a hold beyond its key's spend cap: cap minus what the
// key spent minus the key's open holds (PlaceHold).
var ErrSpendCap = errors.New("store: amount exceeds the key's remaining spend cap")

// Agents is the role of organizations' agents, their key requests and the
// organization allowlist. Agent keys themselves are Keys of kind agent
// with AgentID set; their spend cap is the key's SpendCap, their spend
// KeyUsage, and PlaceHold enforces the cap.
type Agents interface {
	// CreateAgent stores a new agent of an existing account: ErrExists
	// for a taken id, ErrNotFound for an unknown account.
	CreateAgent(ctx context.Context, a Agent) error
	// GetAgent reads an agent, a deleted one too (DeletedAt set).
	GetAgent(ctx context.Context, id string) (Agent, error)
	// ListAgents lists an account's agents not deleted, oldest first.
	ListAgents(ctx context.Context, accountID string) ([]Agent, error)
	// UpdateAgent replaces an agent that is not deleted (ErrNotFound
	// otherwise); its account and CreatedAt stay.
	UpdateAgent(ctx context.Context, a Agent) error
	// DeleteAgent marks an agent deleted at at; ErrNotFound when unknown
	// or already deleted.
	DeleteAgent(ctx context.Context, id string, at time.Time) error

	// CreateKeyRequest stores a pending request for a key of an agent
	// that is not deleted (ErrNotFound otherwise).
	CreateKeyRequest(ctx context.Context, r KeyRequest) error
	GetKeyRequest(ctx context.Context, id string) (KeyRequest, error)
	// ListKeyRequests lists an account's key requests, oldest first.
	ListKeyRequests(ctx context.Context, accountID string) ([]KeyRequest, error)
	// ApproveKeyRequest creates k (as CreateKey does) and marks the
	// request approved with k's id, in one step: of two answers to one
	// request exactly one succeeds, the other gets ErrDecided.
	ApproveKeyRequest(ctx context.Context, id string, k Key, at time.Time) (KeyRequest, error)
	// RejectKeyRequest marks a pending request rejected (ErrDecided when
	// it is not pending).
	RejectKeyRequest(ctx context.Context, id string, at time.Time) (KeyRequest, error)

	// GetOrganization returns an account's policy; an account that never
	// set one allows every model. ErrNotFound for an unknown account.
	GetOrganization(ctx context.Context, accountID string) (Organization, error)
	// SetOrganization replaces an existing account's policy.
	SetOrganization(ctx context.Context, o Organization) error
}

// RemainingCap is what a key with spend cap limit may still reserve:
// limit − spent − held, or ok false when that leaves money's range (then
// nothing fits). Backends decide holds with it.
func RemainingCap(limit, spent, held money.Nano) (money.Nano, bool) {
	r, ok := money.Sub(limit, spent)
	if ok {
		r, ok = money.Sub(r, held)
	}
	return r, ok
}
