package store

import (
	"context"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
)

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
	// TaskID names the async task that owns the hold: crash recovery
	// leaves such a hold to the task engine while the task exists.
	TaskID string `json:"task_id,omitempty"`
	// SpendCap is the key's spend cap when the hold is placed (nil: none):
	// PlaceHold refuses with ErrSpendCap an amount beyond the cap minus
	// what the key spent minus the key's open holds, decided atomically
	// with the hold itself.
	SpendCap *money.Nano `json:"spend_cap,omitempty"`
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

// Wallets is the role of money: balances, holds and settlements. Every
// change of a balance goes through it.
type Wallets interface {
	GetWallet(ctx context.Context, accountID string) (Wallet, error)
	// Credit adds amount (may be negative) to the balance as a ledger entry.
	Credit(ctx context.Context, accountID string, amount money.Nano, note string) (Wallet, error)
	// PlaceHold fails with ErrInsufficient when h.Amount exceeds the
	// available balance (balance minus open holds), and with ErrSpendCap
	// when h.SpendCap is set and h.Amount exceeds it minus the key's
	// usage (KeyUsage) minus the key's open holds. Both are decided with
	// the hold in one atomic step: of concurrent holds exactly those that
	// fit pass.
	PlaceHold(ctx context.Context, h Hold) (Wallet, error)
	// Settle applies a settlement atomically; a backend may commit several
	// in one transaction (group commit). A settlement whose hold no longer
	// exists fails with ErrNotFound and changes nothing (no double charge).
	Settle(ctx context.Context, s Settlement) error
	// OpenHolds lists every hold not yet settled (crash recovery).
	OpenHolds(ctx context.Context) ([]Hold, error)
}
