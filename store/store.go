// Package store defines the one interface for all of Tollgate's state and the
// records it holds. Backends live in sub-packages (badgerstore is the embedded
// default); the rest of the gateway sees only this package.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
)

// Errors every backend returns (wrapped or bare) so callers can use errors.Is.
var (
	ErrNotFound     = errors.New("store: not found")
	ErrExists       = errors.New("store: already exists")
	ErrInsufficient = errors.New("store: amount exceeds the available balance")
	ErrClosed       = errors.New("store: closed")
	// ErrOutOfRange refuses a money move that would take a balance, a held
	// sum or an available balance outside money's range. Nothing changes.
	ErrOutOfRange = errors.New("store: the move would take the account's money out of range (at most ±9223372036.854775807 credits)")
)

// Account statuses.
const (
	AccountActive   = "active"
	AccountDisabled = "disabled"
)

// Account is one customer: one wallet, many keys.
type Account struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Status    string    `json:"status"` // AccountActive or AccountDisabled
	CreatedAt time.Time `json:"created_at"`
	// Per-account overrides of the global limits; 0 means "use the config".
	RPM         int `json:"rpm,omitempty"`
	Concurrency int `json:"concurrency,omitempty"`
}

// Wallet is an account's money. Available = Balance - Held.
type Wallet struct {
	AccountID string     `json:"account_id"`
	Balance   money.Nano `json:"balance"`
	Held      money.Nano `json:"held"`
}

// Available is what new holds may still reserve (may be negative). The
// books keep it within money's range; should a wallet not be, the floor
// money.Min is answered, which no hold can pass.
func (w Wallet) Available() money.Nano {
	a, ok := money.Sub(w.Balance, w.Held)
	if !ok {
		return money.Min
	}
	return a
}

// LedgerEntry is one change of a balance that is not a request settlement:
// a sign-up credit, a top-up, an admin correction.
type LedgerEntry struct {
	ID        uint64     `json:"id"`
	AccountID string     `json:"account_id"`
	Amount    money.Nano `json:"amount"`
	Note      string     `json:"note"`
	CreatedAt time.Time  `json:"created_at"`
}

// Hold is money reserved for a request in flight. It carries what is needed
// to write the request's log row if the process dies before settlement.
type Hold struct {
	ID          string     `json:"id"` // equals the request id
	AccountID   string     `json:"account_id"`
	KeyID       string     `json:"key_id"`
	KeyName     string     `json:"key_name"`
	KeyPrefix   string     `json:"key_prefix"`
	Model       string     `json:"model"`
	UnitType    string     `json:"unit_type,omitempty"`
	Amount      money.Nano `json:"amount"`
	SubmittedAt time.Time  `json:"submitted_at"`
}

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
}

// Log row statuses.
const (
	StatusSuccess     = "success"
	StatusError       = "error"
	StatusInterrupted = "interrupted"
	StatusRejected    = "rejected"
)

// Attempt is a failed upstream attempt folded into the served request's row.
type Attempt struct {
	Seq          int       `json:"seq"`
	CreatedAt    time.Time `json:"created_at"`
	LatencyMS    int64     `json:"latency_ms"`
	ErrorCode    string    `json:"error_code,omitempty"`
	ErrorMessage string    `json:"error_message,omitempty"`
}

// KV is one line of the technical view.
type KV struct {
	K string `json:"k"`
	V string `json:"v"`
}

// TechView is the technical detail of a row (GET /v1/logs/{id}).
type TechView struct {
	Kind        string `json:"kind,omitempty"` // video, image, music, audio or ""
	Request     []KV   `json:"request"`
	Upstream    []KV   `json:"upstream"`
	Gateway     []KV   `json:"gateway"`
	RequestNote string `json:"request_note,omitempty"`
}

// LogRow is one usage-log row. Empty strings stand for the spec's nulls.
type LogRow struct {
	ID              uint64     `json:"id"` // assigned by the store, never reused
	AccountID       string     `json:"account_id"`
	CreatedAt       time.Time  `json:"created_at"`
	SubmittedAt     time.Time  `json:"submitted_at"`
	KeyID           string     `json:"key_id"`
	KeyName         string     `json:"key_name"`
	KeyPrefix       string     `json:"key_prefix"`
	Model           string     `json:"model"`
	Status          string     `json:"status"`
	ErrorCode       string     `json:"error_code,omitempty"`
	ErrorMessage    string     `json:"error_message,omitempty"`
	InputTokens     int64      `json:"input_tokens"`
	OutputTokens    int64      `json:"output_tokens"`
	CachedTokens    int64      `json:"cached_tokens"`
	UnitCount       *int64     `json:"unit_count,omitempty"`
	UnitType        string     `json:"unit_type,omitempty"`
	Cost            money.Nano `json:"cost"`
	LatencyMS       int64      `json:"latency_ms"`
	RequestID       string     `json:"request_id"`
	TaskID          string     `json:"task_id,omitempty"`
	ResultURLs      []string   `json:"result_urls,omitempty"`
	ResultExpiresAt *time.Time `json:"result_expires_at,omitempty"`
	AttemptsCount   *int       `json:"attempts_count,omitempty"`
	Attempts        []Attempt  `json:"attempts,omitempty"`
	Tech            *TechView  `json:"tech,omitempty"`
}

// Settlement closes a hold: the hold is removed, Charge is deducted from the
// balance (without gating: the balance may go below zero) and Row is written,
// all in one atomic step. HoldID may be empty for a request that never held
// money (a rejected request): then only the row is written and Charge must be 0.
type Settlement struct {
	HoldID string
	Charge money.Nano
	Row    *LogRow
}

// LogQuery selects log rows of one account. Zero values mean "no filter".
type LogQuery struct {
	AccountID  string
	KeyID      string    // only this key's rows
	From, To   time.Time // created_at >= From and created_at < To; zero = open
	Models     []string  // any of
	Statuses   []string  // any of
	UnitTypes  []string  // any of; "chat" matches rows with an empty UnitType
	ErrorCodes []string  // any of
	Ref        string    // exact task_id or request_id
	Asc        bool      // order by (created_at, id) ascending; default descending
	// After continues a page: rows strictly after this (created_at, id)
	// position in the query's order. Nil starts at the window's edge.
	After *LogPosition
	Limit int // rows to return; the backend may cap it
}

// LogPosition is a row's place in (created_at, id) order, used by cursors.
type LogPosition struct {
	CreatedAt time.Time
	ID        uint64
}

// Store is all of Tollgate's durable state. Implementations are safe for
// concurrent use. Every method takes the caller's context.
type Store interface {
	// Accounts and wallets. CreateAccount writes the account, its wallet and,
	// when initialCredit != 0, a ledger entry with note, in one step.
	CreateAccount(ctx context.Context, a Account, initialCredit money.Nano, note string) error
	GetAccount(ctx context.Context, id string) (Account, error)
	ListAccounts(ctx context.Context) ([]Account, error)
	UpdateAccount(ctx context.Context, a Account) error
	GetWallet(ctx context.Context, accountID string) (Wallet, error)
	// Credit adds amount (may be negative) to the balance as a ledger entry.
	Credit(ctx context.Context, accountID string, amount money.Nano, note string) (Wallet, error)
	ListLedger(ctx context.Context, accountID string) ([]LedgerEntry, error)

	// Holds. PlaceHold fails with ErrInsufficient when h.Amount exceeds the
	// available balance (balance minus open holds).
	PlaceHold(ctx context.Context, h Hold) (Wallet, error)
	// Settle applies settlements atomically each; a backend may commit several
	// in one transaction (group commit). A settlement whose hold no longer
	// exists fails with ErrNotFound and changes nothing (no double charge).
	Settle(ctx context.Context, s Settlement) error
	// OpenHolds lists every hold not yet settled (crash recovery).
	OpenHolds(ctx context.Context) ([]Hold, error)

	// Keys. KeyByHash is the authentication lookup.
	CreateKey(ctx context.Context, k Key) error
	GetKey(ctx context.Context, id string) (Key, error)
	KeyByHash(ctx context.Context, hash []byte) (Key, error)
	ListKeys(ctx context.Context, accountID string) ([]Key, error)
	UpdateKey(ctx context.Context, k Key) error
	DeleteKey(ctx context.Context, id string) error
	// KeyUsage is the total charged to one key over its life.
	KeyUsage(ctx context.Context, keyID string) (money.Nano, error)
	// TouchKey records when a key was last used; GetKey and ListKeys
	// report it as LastUsedAt. An unknown key is ErrNotFound.
	TouchKey(ctx context.Context, keyID string, at time.Time) error

	// Logs.
	GetLog(ctx context.Context, id uint64) (LogRow, error)
	QueryLogs(ctx context.Context, q LogQuery) ([]LogRow, error)
	// ScanLogs calls fn for each row matching q (Limit ignored) in order,
	// without holding them all in memory; fn returning false stops the scan.
	ScanLogs(ctx context.Context, q LogQuery, fn func(LogRow) bool) error

	// Idempotency-Key records (idempotency.go).
	Idempotency

	// Models registered at runtime (config models are not stored).
	PutModel(ctx context.Context, m Model) error
	ListModels(ctx context.Context) ([]Model, error)

	Close() error
}

// Model is a model registry entry kept in the store.
type Model struct {
	ID      string `json:"id"`
	OwnedBy string `json:"owned_by"`
	Family  string `json:"family"`
}
