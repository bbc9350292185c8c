package badgerstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// An op is one money move handed to the writer goroutine. Its caller
// builds every key and value it can before submitting; apply only reads
// the transaction's view, decides, and writes.
type op struct {
	kind opKind
	ctx  context.Context

	account string     // wallet owner (placeHold, createAccount, credit)
	amount  money.Nano // hold amount, initial credit, credit
	note    string     // ledger note
	key     []byte     // hold key (placeHold, settle), account key (createAccount)
	val     []byte     // hold value, account value

	// settle
	charge     money.Nano
	row        *store.LogRow
	rowVal     []byte
	idxVal     []byte
	idxKeys    [][]byte // log index keys, id bytes filled in by apply
	refKeys    [][]byte
	rowID      uint64
	ledgerID   uint64
	wallet     store.Wallet
	wroteWal   bool // wallet is what this op wrote
	err        error
	done       chan struct{}
	ledgerTime time.Time
}

type opKind uint8

const (
	opPlaceHold opKind = iota
	opSettle
	opCreateAccount
	opCredit
)

var opPool = sync.Pool{New: func() any { return &op{done: make(chan struct{}, 1)} }}

func newOp(ctx context.Context, k opKind) *op {
	o := opPool.Get().(*op)
	o.kind, o.ctx = k, ctx
	return o
}

func freeOp(o *op) {
	done := o.done
	idx, ref := o.idxKeys[:0], o.refKeys[:0]
	*o = op{done: done, idxKeys: idx, refKeys: ref}
	opPool.Put(o)
}

// submit hands o to the writer and waits for its result. Once submitted
// an op is always answered, so the caller learns what really happened
// even if ctx ends meanwhile (the writer skips ops whose ctx has ended).
func (s *Store) submit(o *op) error {
	if err := s.enter(o.ctx); err != nil {
		return err
	}
	s.ops <- o
	s.mu.RUnlock()
	<-o.done
	return o.err
}

func (s *Store) writeLoop() {
	defer close(s.writerDone)
	batch := make([]*op, 0, maxBatch)
	for first := range s.ops {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < maxBatch {
			select {
			case o, ok := <-s.ops:
				if !ok {
					break fill
				}
				batch = append(batch, o)
			default:
				break fill
			}
		}
		for len(batch) > 0 {
			n := s.commitSome(batch)
			batch = batch[n:]
		}
	}
}

// commitSome commits a prefix of ops in one transaction and answers
// them; it returns how many it answered (at least one). An op refused by
// its own check is answered with that error and leaves no write behind.
// When a write fails (ErrTxnTooBig above all), the ops before it are
// committed alone and the failing op goes first in the next transaction;
// an op that fails even alone gets the error.
func (s *Store) commitSome(ops []*op) int {
	end, conflicts := len(ops), 0
	for {
		txn := s.db.NewTransaction(true)
		clear(s.pending)
		failedAt, werr := -1, error(nil)
		for i := range end {
			o := ops[i]
			o.err = nil
			if err := o.ctx.Err(); err != nil {
				o.err = err
				continue
			}
			refused, err := s.apply(txn, o)
			if err != nil {
				failedAt, werr = i, err
				break
			}
			o.err = refused
		}
		if failedAt >= 0 {
			txn.Discard()
			if failedAt == 0 {
				ops[0].err = werr
				ops[0].done <- struct{}{}
				return 1
			}
			end = failedAt
			continue
		}
		err := txn.Commit()
		if errors.Is(err, badger.ErrConflict) && conflicts < maxConflictRetries {
			conflicts++
			continue
		}
		for _, o := range ops[:end] {
			if o.err == nil {
				if err != nil {
					o.err = err
				} else {
					if o.kind == opSettle {
						o.row.ID = o.rowID
					}
					if o.wroteWal {
						s.wallets.committed(o.wallet)
					}
				}
			}
			o.done <- struct{}{}
		}
		return end
	}
}

// apply runs one op against txn. refused is the op's own answer (not
// found, insufficient...), given before any write; err is a failed write
// or read, which spoils the transaction.
func (s *Store) apply(txn *badger.Txn, o *op) (refused, err error) {
	switch o.kind {
	case opPlaceHold:
		return s.applyPlaceHold(txn, o)
	case opSettle:
		return s.applySettle(txn, o)
	case opCreateAccount:
		return s.applyCreateAccount(txn, o)
	case opCredit:
		return s.applyCredit(txn, o)
	}
	return nil, fmt.Errorf("badgerstore: unknown op %d", o.kind)
}

// writerWallet is the writer's read of a wallet: what this transaction
// already wrote, else the last committed wallet, else the database.
func (s *Store) writerWallet(txn *badger.Txn, account string) (store.Wallet, error, error) {
	if w, ok := s.pending[account]; ok {
		return w, nil, nil
	}
	if w, ok := s.wallets.get(account); ok {
		return w, nil, nil
	}
	return readWallet(txn, account)
}

// setWallet writes a wallet in the writer's transaction and remembers it
// for the ops after it and, once committed, for readers.
func (s *Store) setWallet(txn *badger.Txn, o *op, w store.Wallet) error {
	s.pending[w.AccountID] = w
	o.wallet, o.wroteWal = w, true
	return txn.Set(walletKey(w.AccountID), encodeWallet(w))
}

// readWallet reads an account's wallet; refused is ErrNotFound when the
// account has none.
func readWallet(txn *badger.Txn, account string) (w store.Wallet, refused, err error) {
	err = get(txn, walletKey(account), func(v []byte) (e error) {
		w, e = decodeWallet(account, v)
		return e
	})
	if errors.Is(err, store.ErrNotFound) {
		return w, err, nil
	}
	return w, nil, err
}

func (s *Store) applyPlaceHold(txn *badger.Txn, o *op) (error, error) {
	dup, err := exists(txn, o.key)
	if err != nil {
		return nil, err
	}
	if dup {
		return store.ErrExists, nil
	}
	w, refused, err := s.writerWallet(txn, o.account)
	if refused != nil || err != nil {
		return refused, err
	}
	if o.amount > w.Balance-w.Held {
		return store.ErrInsufficient, nil
	}
	w.Held += o.amount
	if err := txn.Set(o.key, o.val); err != nil {
		return nil, err
	}
	return nil, s.setWallet(txn, o, w)
}

func (s *Store) applySettle(txn *badger.Txn, o *op) (error, error) {
	var keyUse []byte
	var use money.Nano
	var w store.Wallet
	if o.key != nil {
		var h store.Hold
		err := get(txn, o.key, func(v []byte) (e error) {
			h, e = decodeHold(v)
			return e
		})
		if errors.Is(err, store.ErrNotFound) {
			return err, nil
		}
		if err != nil {
			return nil, err
		}
		if h.AccountID != o.row.AccountID {
			return fmt.Errorf("badgerstore: row account %q differs from hold account %q", o.row.AccountID, h.AccountID), nil
		}
		var refused error
		w, refused, err = s.writerWallet(txn, h.AccountID)
		if refused != nil || err != nil {
			return refused, err
		}
		w.Held -= h.Amount
		w.Balance -= o.charge
		if o.charge != 0 && h.KeyID != "" {
			keyUse = keyUseKey(h.KeyID)
			err := get(txn, keyUse, func(v []byte) (e error) {
				use, e = decodeNano(v)
				return e
			})
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
		}
	}
	id, err := nextID(s.logSeq)
	if err != nil {
		return nil, err
	}
	if o.key != nil {
		if err := txn.Delete(o.key); err != nil {
			return nil, err
		}
		if err := s.setWallet(txn, o, w); err != nil {
			return nil, err
		}
		if keyUse != nil {
			if err := txn.Set(keyUse, encodeNano(use+o.charge)); err != nil {
				return nil, err
			}
		}
	}
	if err := txn.Set(logKey(id), o.rowVal); err != nil {
		return nil, err
	}
	for _, k := range o.idxKeys {
		putID(k, id)
		if err := txn.Set(k, o.idxVal); err != nil {
			return nil, err
		}
	}
	for _, k := range o.refKeys {
		putID(k, id)
		if err := txn.Set(k, nil); err != nil {
			return nil, err
		}
	}
	o.rowID = id
	return nil, nil
}

func (s *Store) applyCreateAccount(txn *badger.Txn, o *op) (error, error) {
	dup, err := exists(txn, o.key)
	if err != nil {
		return nil, err
	}
	if dup {
		return store.ErrExists, nil
	}
	if err := txn.Set(o.key, o.val); err != nil {
		return nil, err
	}
	w := store.Wallet{AccountID: o.account, Balance: o.amount}
	if err := s.setWallet(txn, o, w); err != nil {
		return nil, err
	}
	if o.amount == 0 {
		return nil, nil
	}
	return nil, s.writeLedger(txn, o)
}

func (s *Store) applyCredit(txn *badger.Txn, o *op) (error, error) {
	w, refused, err := s.writerWallet(txn, o.account)
	if refused != nil || err != nil {
		return refused, err
	}
	w.Balance += o.amount
	if err := s.setWallet(txn, o, w); err != nil {
		return nil, err
	}
	return nil, s.writeLedger(txn, o)
}

func (s *Store) writeLedger(txn *badger.Txn, o *op) error {
	id, err := nextID(s.ledgerSeq)
	if err != nil {
		return err
	}
	v, err := json.Marshal(store.LedgerEntry{
		ID: id, AccountID: o.account, Amount: o.amount, Note: o.note, CreatedAt: o.ledgerTime,
	})
	if err != nil {
		return err
	}
	o.ledgerID = id
	return txn.Set(ledgerKey(o.account, id), v)
}

// nextID draws from a sequence, skipping 0 so no id is ever zero. Ids
// leased but not used before a crash are skipped, never reused.
func nextID(seq *badger.Sequence) (uint64, error) {
	for {
		id, err := seq.Next()
		if err != nil || id != 0 {
			return id, err
		}
	}
}

// PlaceHold reserves h.Amount of the account's available balance.
func (s *Store) PlaceHold(ctx context.Context, h store.Hold) (store.Wallet, error) {
	if err := checkID("hold", h.ID); err != nil {
		return store.Wallet{}, err
	}
	if h.Amount < 0 {
		return store.Wallet{}, fmt.Errorf("badgerstore: negative hold %s", h.Amount)
	}
	o := newOp(ctx, opPlaceHold)
	defer freeOp(o)
	o.account, o.amount = h.AccountID, h.Amount
	o.key, o.val = holdKey(h.ID), encodeHold(&h)
	err := s.submit(o)
	return o.wallet, err
}

// Settle closes a hold and writes its row in one step; s.Row.ID is set.
func (s *Store) Settle(ctx context.Context, st store.Settlement) error {
	o, err := newSettleOp(ctx, st)
	if err != nil {
		return err
	}
	defer freeOp(o)
	return s.submit(o)
}

// newSettleOp checks st and builds every key and value of its writes
// except the row id, which the writer fills in.
func newSettleOp(ctx context.Context, st store.Settlement) (*op, error) {
	r := st.Row
	if r == nil {
		return nil, errors.New("badgerstore: settlement without a row")
	}
	if err := checkID("account", r.AccountID); err != nil {
		return nil, err
	}
	if r.KeyID != "" {
		if err := checkID("key", r.KeyID); err != nil {
			return nil, err
		}
	}
	if st.Charge < 0 {
		return nil, fmt.Errorf("badgerstore: negative charge %s", st.Charge)
	}
	if st.HoldID == "" && st.Charge != 0 {
		return nil, fmt.Errorf("badgerstore: charge %s without a hold", st.Charge)
	}
	o := newOp(ctx, opSettle)
	if st.HoldID != "" {
		o.key = holdKey(st.HoldID)
	}
	o.charge, o.row = st.Charge, r
	o.rowVal = encodeRow(make([]byte, 0, 256), r)
	o.idxVal = encodeIndex(make([]byte, 0, 16+len(r.Status)+len(r.Model)+len(r.UnitType)+len(r.ErrorCode)), r)
	o.idxKeys = append(o.idxKeys, appendPos(logAcctPrefix(r.AccountID), r.CreatedAt, 0))
	if r.KeyID != "" {
		o.idxKeys = append(o.idxKeys, appendPos(logKeyPrefix(r.AccountID, r.KeyID), r.CreatedAt, 0))
	}
	// A ref with a NUL byte is not indexed: Ref queries cannot name it.
	if validID(r.RequestID) {
		o.refKeys = append(o.refKeys, appendID(logRefPrefix(r.RequestID), 0))
	}
	if r.TaskID != r.RequestID && validID(r.TaskID) {
		o.refKeys = append(o.refKeys, appendID(logRefPrefix(r.TaskID), 0))
	}
	return o, nil
}

// CreateAccount writes the account, its wallet and the opening credit.
func (s *Store) CreateAccount(ctx context.Context, a store.Account, initialCredit money.Nano, note string) error {
	if err := checkID("account", a.ID); err != nil {
		return err
	}
	o := newOp(ctx, opCreateAccount)
	defer freeOp(o)
	o.account, o.amount, o.note, o.ledgerTime = a.ID, initialCredit, note, time.Now().UTC()
	o.key, o.val = accountKey(a.ID), encodeAccount(&a)
	return s.submit(o)
}

// Credit adds amount (negative for a correction) to the balance.
func (s *Store) Credit(ctx context.Context, accountID string, amount money.Nano, note string) (store.Wallet, error) {
	if err := checkID("account", accountID); err != nil {
		return store.Wallet{}, err
	}
	o := newOp(ctx, opCredit)
	defer freeOp(o)
	o.account, o.amount, o.note, o.ledgerTime = accountID, amount, note, time.Now().UTC()
	err := s.submit(o)
	return o.wallet, err
}
