// Package store defines Tollgate's state as role interfaces, one per file
// (accounts, wallet, keys, logs, idempotency, tasks, models, knowledge
// bases, agents, console users, console sessions, card top-ups, the books), and the records they
// hold. Store is their union: what a backend implements. Backends live in
// sub-packages (badgerstore is the embedded default); the rest of the gateway sees only this package, and each part
// of it asks for the roles it uses.
package store

import "errors"

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

// Store is all of Tollgate's durable state. Implementations are safe for
// concurrent use. Every method takes the caller's context.
type Store interface {
	Accounts
	Wallets
	Keys
	Logs
	Idempotency
	Tasks
	Models
	KnowledgeBases
	Agents
	Users
	Sessions
	Orders
	Books

	Close() error
}
