package store

import (
	"context"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
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

// LedgerEntry is one change of a balance that is not a request settlement:
// a sign-up credit, a top-up, an admin correction.
type LedgerEntry struct {
	ID        uint64     `json:"id"`
	AccountID string     `json:"account_id"`
	Amount    money.Nano `json:"amount"`
	Note      string     `json:"note"`
	// OrderID is the card top-up that caused it (its credit, or a
	// refund's debit); "" for a sign-up credit or an operator's.
	OrderID string `json:"order_id,omitempty"`
	// AdminToken is the id of the admin token that made it, UserID the
	// console user who did (store.Cause); "" when neither did.
	AdminToken string    `json:"admin_token,omitempty"`
	UserID     string    `json:"user_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// Accounts is the role of accounts (organizations) and their ledgers.
type Accounts interface {
	// CreateAccount writes the account, its wallet and, when
	// initialCredit != 0, a ledger entry with note, in one step.
	CreateAccount(ctx context.Context, a Account, initialCredit money.Nano, note string) error
	GetAccount(ctx context.Context, id string) (Account, error)
	ListAccounts(ctx context.Context) ([]Account, error)
	UpdateAccount(ctx context.Context, a Account) error
	ListLedger(ctx context.Context, accountID string) ([]LedgerEntry, error)
}
