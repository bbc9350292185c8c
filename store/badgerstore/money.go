package badgerstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// Money moves (holds, settlements, credits, new accounts) are decided in
// memory, under one lock, against the books: every wallet touched since
// the store opened and every open hold. A move is written to the journal
// before the call returns and applied to Badger later by one goroutine,
// many moves per transaction, so no two writers ever race on a wallet and
// the caller never waits on Badger. Reads that must see every move (log
// queries, key usage) first wait until Badger has caught up.

// Journal record kinds.
const (
	kindHold    byte = 'h'
	kindSettle  byte = 's'
	kindAccount byte = 'a'
	kindCredit  byte = 'c'
	kindFinish  byte = 'f' // a settlement that also ends its task (tasks.go)
	kindOrder   byte = 'o' // a credit (or none) that also writes its order (orders.go)
)

// defaultApplyDelay is how long moves gather before Badger gets them: a
// hold settled within it is never written to Badger at all.
const defaultApplyDelay = 20 * time.Millisecond

// books is the in-memory truth of money and the queue to Badger.
type books struct {
	mu      sync.Mutex
	wallets map[string]*store.Wallet // accounts touched since open; Badger holds the others as they are
	holds   map[string]*store.Hold   // every open hold
	j       *journal                 // nil in memory mode
	space   *space                   // nil in memory mode
	seq     uint64                   // last journal record
	queue   []*entry                 // journaled, not yet in Badger
	spare   []*entry
	scratch []byte // a settlement's journal record, under mu

	// Spend caps (spendcap.go): each key's open holds, the lifetime spend
	// of the capped keys seen since open, and how many charges of each
	// key are journaled but not yet in Badger.
	keyHeld   map[string]money.Nano
	spent     map[string]money.Nano
	unapplied map[string]int
	// orders are the orders with a write journaled but not yet in Badger
	// (orders.go): Badger holds the others as they are.
	orders map[string]*bookedOrder

	applied   atomic.Uint64 // last record Badger has
	appliedMu sync.Mutex
	caughtUp  chan struct{} // closed when applied moves

	work, urge chan struct{}
	stop       chan struct{}
	discard    bool // tests: stop without applying (a simulated crash)
	delay      time.Duration
	done       chan struct{}
}

// holdEntry is a hold's move with the books' copy of the hold and room
// for its record.
type holdEntry struct {
	entry
	hold store.Hold
	val  [160]byte
}

// settleEntry is a settlement's move with room for its row, index value
// and keys (settleKeys), enough for a chat call's.
type settleEntry struct {
	entry
	room [512]byte
}

// entry is one journaled move waiting for Badger, with every key and
// value of its writes prepared.
type entry struct {
	seq       uint64
	kind      byte
	account   string
	amount    money.Nano // hold amount, credit, opening credit
	holdID    string
	holdVal   []byte
	keyID     string
	charge    money.Nano
	rowVal    []byte
	idxVal    []byte
	logKey    []byte // log/{id}, the row's key
	idxKeys   [][]byte
	idxKeyArr [2][]byte
	dimVal    []byte   // value of the per-value index entries: key id, then idxVal
	dimKeys   [][]byte // per-value index entries (model, error code)
	dimKeyArr [2][]byte
	refKeys   [][]byte
	refKeyArr [2][]byte
	acctVal   []byte
	ledger    []byte // ledger entry (JSON) under ledgerID
	ledgID    uint64
	taskID    string // kindFinish: the task ended, its record and result body
	taskVal   []byte
	taskBody  []byte
	order     *store.Order // kindOrder: the order written, and its JSON
	orderVal  []byte
	// What the move's book entry names beside the fields above
	// (books.go): the request and task of a settlement's row or of a
	// hold, the run that placed a hold, and when the move was made.
	causeReq, causeTask, owner string
	at                         time.Time
}

func newBooks(delay time.Duration) *books {
	if delay <= 0 {
		delay = defaultApplyDelay
	}
	return &books{
		wallets: map[string]*store.Wallet{}, holds: map[string]*store.Hold{},
		keyHeld: map[string]money.Nano{}, spent: map[string]money.Nano{}, unapplied: map[string]int{},
		orders:   map[string]*bookedOrder{},
		caughtUp: make(chan struct{}),
		work:     make(chan struct{}, 1), urge: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), delay: delay,
	}
}

func nudge(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// record journals a move and queues it; b.mu is held. On error nothing
// changed.
func (b *books) record(e *entry, payload []byte) error {
	seq := b.seq + 1
	if b.j != nil {
		if err := b.j.append(seq, e.kind, payload); err != nil {
			// Nothing was recorded: the caller may try again once the
			// disk takes writes (a settlement waits for it, pipeline's
			// SettleQueue).
			b.space.full(err)
			return fmt.Errorf("%w: the journal refused the move: %v", store.ErrUnavailable, bare(err))
		}
	}
	b.seq, e.seq = seq, seq
	if cap(b.scratch) > 64<<10 {
		b.scratch = nil // a large task answer is not kept
	}
	if len(b.queue) == 0 {
		nudge(b.work)
	}
	b.queue = append(b.queue, e)
	if len(b.queue) >= maxBatch {
		nudge(b.urge)
	}
	return nil
}

// maxQueued bounds the moves waiting for Badger: past it a caller waits
// until its own move is applied, so a burst Badger cannot keep up with
// slows the callers down instead of growing the queue without end.
const maxQueued = 16 * maxBatch

// settled ends a move's call: in strict mode it waits until the journal is
// fsynced up to seq, and it waits for Badger when the queue is too long.
// The move is made whatever ctx says, so the wait ignores ctx's end.
func (s *Store) settled(ctx context.Context, seq uint64, queued int) error {
	b := s.books
	if queued >= maxQueued {
		// Bounded: should Badger stop taking writes, calls go on slowly
		// (their moves are journaled) instead of hanging.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = s.catchUp(wctx, seq)
		cancel()
	}
	if b.j == nil || !b.j.strict {
		return nil
	}
	return b.j.sync(seq)
}

// lockWallet takes b.mu and returns the account's wallet, reading it from
// Badger on first use. b.mu is held on return, error or not.
func (s *Store) lockWallet(account string) (*store.Wallet, error) {
	b := s.books
	b.mu.Lock()
	if w, ok := b.wallets[account]; ok {
		return w, nil
	}
	b.mu.Unlock()
	var w store.Wallet
	err := s.db.View(func(txn *badger.Txn) error {
		var refused, err error
		w, refused, err = readWallet(txn, account)
		return errors.Join(refused, err)
	})
	b.mu.Lock()
	if cur, ok := b.wallets[account]; ok {
		return cur, nil // a move of this run got there first: it is newer
	}
	if err != nil {
		return nil, err
	}
	b.wallets[account] = &w
	return &w, nil
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

// GetWallet returns an account's wallet.
func (s *Store) GetWallet(ctx context.Context, accountID string) (store.Wallet, error) {
	if err := s.enter(ctx); err != nil {
		return store.Wallet{}, err
	}
	defer s.mu.RUnlock()
	w, err := s.lockWallet(accountID)
	defer s.books.mu.Unlock()
	if err != nil {
		return store.Wallet{}, err
	}
	return *w, nil
}

// PlaceHold reserves h.Amount of the account's available balance.
func (s *Store) PlaceHold(ctx context.Context, h store.Hold) (store.Wallet, error) {
	if err := checkID("hold", h.ID); err != nil {
		return store.Wallet{}, err
	}
	if h.Amount < 0 {
		return store.Wallet{}, fmt.Errorf("badgerstore: negative hold %s", h.Amount)
	}
	if err := s.refuseMoves(); err != nil {
		return store.Wallet{}, err
	}
	if err := s.enter(ctx); err != nil {
		return store.Wallet{}, err
	}
	defer s.mu.RUnlock()
	// The move, the books' copy of the hold and its record share one
	// allocation.
	he := &holdEntry{hold: h}
	val := encodeHold(he.val[:0], &h)
	he.entry = entry{kind: kindHold, account: h.AccountID, amount: h.Amount, holdID: h.ID, holdVal: val,
		causeTask: h.TaskID, owner: s.run, at: h.SubmittedAt}
	e := &he.entry
	b := s.books
	w, err := s.lockWallet(h.AccountID)
	if err == nil && h.SpendCap != nil {
		err = s.loadSpent(ctx, h.KeyID)
	}
	if err != nil {
		b.mu.Unlock()
		return store.Wallet{}, err
	}
	if _, dup := b.holds[h.ID]; dup {
		b.mu.Unlock()
		return store.Wallet{}, store.ErrExists
	}
	if h.Amount > w.Available() {
		b.mu.Unlock()
		return store.Wallet{}, store.ErrInsufficient
	}
	if h.SpendCap != nil && !b.capFits(h) {
		b.mu.Unlock()
		return store.Wallet{}, store.ErrSpendCap
	}
	next, err := moved(*w, 0, h.Amount)
	if err != nil {
		b.mu.Unlock()
		return store.Wallet{}, err
	}
	if err := b.record(e, val); err != nil {
		b.mu.Unlock()
		return store.Wallet{}, err
	}
	*w = next
	b.holds[h.ID] = &he.hold
	b.heldByKey(h)
	out, queued := *w, len(b.queue)
	b.mu.Unlock()
	return out, s.settled(ctx, e.seq, queued)
}

// Settle closes a hold and writes its row in one step; st.Row.ID is set.
func (s *Store) Settle(ctx context.Context, st store.Settlement) error {
	r := st.Row
	if r == nil {
		return errors.New("badgerstore: settlement without a row")
	}
	if err := checkID("account", r.AccountID); err != nil {
		return err
	}
	if r.KeyID != "" {
		if err := checkID("key", r.KeyID); err != nil {
			return err
		}
	}
	if st.Charge < 0 {
		return fmt.Errorf("badgerstore: negative charge %s", st.Charge)
	}
	if st.HoldID == "" && st.Charge != 0 {
		return fmt.Errorf("badgerstore: charge %s without a hold", st.Charge)
	}
	// A settlement is refused like any move while the store cannot write
	// (its hold stays, the evidence of the call, until it is written).
	if err := s.refuseMoves(); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	se := &settleEntry{entry: entry{kind: kindSettle, account: r.AccountID, holdID: st.HoldID, charge: st.Charge}}
	e := &se.entry
	settleKeys(e, r, true, se.room[:])

	b := s.books
	var w *store.Wallet
	if st.HoldID != "" {
		var err error
		if w, err = s.lockWallet(r.AccountID); err != nil {
			b.mu.Unlock()
			return err
		}
		h, ok := b.holds[st.HoldID]
		if !ok {
			b.mu.Unlock()
			return store.ErrNotFound
		}
		if h.AccountID != r.AccountID {
			b.mu.Unlock()
			return fmt.Errorf("badgerstore: row account %q differs from hold account %q", r.AccountID, h.AccountID)
		}
		e.amount, e.keyID = h.Amount, h.KeyID
		// The charge may exceed the hold; the balance may go below zero,
		// but not out of range: then nothing is booked (the caller
		// decides, see pipeline's log stage).
		if _, err := moved(*w, -e.charge, -e.amount); err != nil {
			b.mu.Unlock()
			return err
		}
	} else {
		b.mu.Lock()
	}
	id, err := nextID(s.logSeq)
	if err != nil {
		b.mu.Unlock()
		return err
	}
	setRowID(e, id)
	b.scratch = settlePayload(b.scratch[:0], e, id)
	if err := b.record(e, b.scratch); err != nil {
		b.mu.Unlock()
		return err
	}
	if w != nil {
		*w, _ = moved(*w, -e.charge, -e.amount) // checked above, under the same lock
		b.closed(*b.holds[st.HoldID], e.charge)
		delete(b.holds, st.HoldID)
	}
	queued := len(b.queue)
	b.mu.Unlock()
	r.ID = id
	return s.settled(ctx, e.seq, queued)
}

// moved is w after adding dBalance to its balance and dHeld to its held
// sum, or store.ErrOutOfRange when the balance, the held sum or the
// available balance would leave money's range (or the held sum go below
// zero). Every move of the books goes through it, so none can wrap.
func moved(w store.Wallet, dBalance, dHeld money.Nano) (store.Wallet, error) {
	bal, ok1 := money.Add(w.Balance, dBalance)
	held, ok2 := money.Add(w.Held, dHeld)
	_, ok3 := money.Sub(bal, held)
	if !ok1 || !ok2 || !ok3 || held < 0 {
		return w, fmt.Errorf("account %q: balance %s, held %s, move %s / %s: %w",
			w.AccountID, w.Balance, w.Held, dBalance, dHeld, store.ErrOutOfRange)
	}
	w.Balance, w.Held = bal, held
	return w, nil
}

// settleKeys prepares a settlement's row value (when row is set; a
// replayed one has it already), index value and keys, all in one
// allocation; the row id in the keys is filled in by setRowID.
func settleKeys(e *entry, r *store.LogRow, row bool, room []byte) {
	e.causeReq, e.causeTask, e.at = r.RequestID, r.TaskID, r.CreatedAt
	// Per-value indexes bound a page filtered on a rare model or error
	// code by the rows that have it, not by the window. A ref with a NUL
	// byte is not indexed: Ref queries cannot name it.
	model, code := validID(r.Model), validID(r.ErrorCode)
	req, task := validID(r.RequestID), r.TaskID != r.RequestID && validID(r.TaskID)
	idxLen := 16 + len(r.Status) + len(r.Model) + len(r.UnitType) + len(r.ErrorCode) + 3*binary.MaxVarintLen64
	scope := len(r.AccountID) + 1 + posLen
	n := len(pLog) + 8 + idxLen + len(pLogAcct) + scope
	if r.KeyID != "" {
		n += len(pLogKey) + scope + len(r.KeyID) + 1
	}
	if model || code {
		n += binary.MaxVarintLen64 + len(r.KeyID) + idxLen
	}
	if model {
		n += len(pLogMod) + scope + len(r.Model) + 1
	}
	if code {
		n += len(pLogErr) + scope + len(r.ErrorCode) + 1
	}
	if req {
		n += len(pLogRef) + len(r.RequestID) + 1 + 8
	}
	if task {
		n += len(pLogRef) + len(r.TaskID) + 1 + 8
	}
	if row {
		n += 224 // a chat call's row is about 200 bytes; a larger one grows buf once
	}
	// The parts are appended to buf and cut from it by their bounds once
	// it stops growing (a large row may still grow it, once).
	buf := room[:0]
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	var bounds [10]int
	nb := 0
	mark := func() { bounds[nb] = len(buf); nb++ }
	key := func(prefix string, parts ...string) {
		buf = append(buf, prefix...)
		for _, p := range parts {
			buf = append(append(buf, p...), sep)
		}
		buf = appendPos(buf, r.CreatedAt, 0)
		mark()
	}
	buf = appendID(append(buf, pLog...), 0)
	mark()
	buf = encodeIndex(buf, r)
	mark()
	key(pLogAcct, r.AccountID)
	if r.KeyID != "" {
		key(pLogKey, r.AccountID, r.KeyID)
	}
	if model {
		key(pLogMod, r.AccountID, r.Model)
	}
	if code {
		key(pLogErr, r.AccountID, r.ErrorCode)
	}
	if model || code {
		buf = appendDimValue(buf, r.KeyID, buf[bounds[0]:bounds[1]])
		mark()
	}
	if req {
		buf = appendID(append(append(append(buf, pLogRef...), r.RequestID...), sep), 0)
		mark()
	}
	if task {
		buf = appendID(append(append(append(buf, pLogRef...), r.TaskID...), sep), 0)
		mark()
	}
	if row {
		buf = encodeRow(buf, r)
		mark()
	}
	i, start := 0, 0
	next := func() []byte {
		end := bounds[i]
		i++
		b := buf[start:end:end]
		start = end
		return b
	}
	e.logKey = next()
	e.idxVal = next()
	e.idxKeys = append(e.idxKeyArr[:0], next())
	if r.KeyID != "" {
		e.idxKeys = append(e.idxKeys, next())
	}
	e.dimKeys = e.dimKeyArr[:0]
	if model {
		e.dimKeys = append(e.dimKeys, next())
	}
	if code {
		e.dimKeys = append(e.dimKeys, next())
	}
	if model || code {
		e.dimVal = next()
	}
	e.refKeys = e.refKeyArr[:0]
	if req {
		e.refKeys = append(e.refKeys, next())
	}
	if task {
		e.refKeys = append(e.refKeys, next())
	}
	if row {
		e.rowVal = next()
	}
}

func setRowID(e *entry, id uint64) {
	putID(e.logKey, id)
	for _, k := range e.idxKeys {
		putID(k, id)
	}
	for _, k := range e.dimKeys {
		putID(k, id)
	}
	for _, k := range e.refKeys {
		putID(k, id)
	}
}

// rowID reads the row id back from a settlement's row key.
func (e *entry) rowID() uint64 { return tailID(e.logKey) }

// settlePayload appends a settlement's journal record to b: the books'
// scratch buffer (b.mu held), which the journal copies.
func settlePayload(b []byte, e *entry, id uint64) []byte {
	p := enc{b}
	p.str(e.holdID)
	p.str(e.account)
	p.str(e.keyID)
	p.int(int64(e.amount))
	p.int(int64(e.charge))
	p.uint(id)
	p.bytes(e.rowVal)
	return p.b
}

// CreateAccount writes the account, its wallet and the opening credit.
func (s *Store) CreateAccount(ctx context.Context, a store.Account, initialCredit money.Nano, note string) error {
	if err := checkID("account", a.ID); err != nil {
		return err
	}
	if !initialCredit.Valid() {
		return store.ErrOutOfRange
	}
	if err := s.refuseMoves(); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	e := &entry{kind: kindAccount, account: a.ID, amount: initialCredit, acctVal: encodeAccount(&a)}
	b := s.books
	_, err := s.lockWallet(a.ID)
	switch {
	case err == nil:
		err = store.ErrExists
	case errors.Is(err, store.ErrNotFound):
		err = s.ledgerEntry(e, note, "", store.CauseOf(ctx))
	}
	if err == nil {
		p := enc{make([]byte, 0, 32+len(e.acctVal)+len(e.ledger))}
		p.bytes(e.acctVal)
		p.str(a.ID)
		p.int(int64(initialCredit))
		p.uint(e.ledgID)
		p.bytes(e.ledger)
		err = b.record(e, p.b)
	}
	if err != nil {
		b.mu.Unlock()
		return err
	}
	b.wallets[a.ID] = &store.Wallet{AccountID: a.ID, Balance: initialCredit}
	b.mu.Unlock()
	if err := s.settled(ctx, e.seq, 0); err != nil {
		return err
	}
	return s.catchUp(ctx, e.seq)
}

// Credit adds amount (negative for a correction) to the balance.
func (s *Store) Credit(ctx context.Context, accountID string, amount money.Nano, note string) (store.Wallet, error) {
	if err := checkID("account", accountID); err != nil {
		return store.Wallet{}, err
	}
	return s.credit(ctx, &entry{kind: kindCredit, account: accountID, amount: amount}, note, nil)
}

// credit moves e.amount into e.account's wallet with its ledger entry, in
// one journal record: the one path of every credit, an operator's or a
// top-up's. A kindOrder entry also carries its order's write, which check
// decides under the books' lock (the order's compare-and-set); such an
// entry may move no money, and then has no ledger entry.
func (s *Store) credit(ctx context.Context, e *entry, note string, check func() error) (store.Wallet, error) {
	if err := s.refuseMoves(); err != nil {
		return store.Wallet{}, err
	}
	if err := s.enter(ctx); err != nil {
		return store.Wallet{}, err
	}
	defer s.mu.RUnlock()
	b := s.books
	w, err := s.lockWallet(e.account)
	if err == nil && check != nil {
		err = check()
	}
	var next store.Wallet
	if err == nil {
		next, err = moved(*w, e.amount, 0)
	}
	if err == nil && (e.kind == kindCredit || e.amount != 0) {
		orderID := ""
		if e.order != nil {
			orderID = e.order.ID
		}
		err = s.ledgerEntry(e, note, orderID, store.CauseOf(ctx))
	}
	if err == nil {
		p := enc{make([]byte, 0, 48+len(e.account)+len(e.ledger)+len(e.orderVal))}
		p.str(e.account)
		p.int(int64(e.amount))
		p.uint(e.ledgID)
		p.bytes(e.ledger)
		if e.kind == kindOrder {
			p.bytes(e.orderVal)
		}
		err = b.record(e, p.b)
	}
	if err != nil {
		b.mu.Unlock()
		return store.Wallet{}, err
	}
	*w = next
	if e.kind == kindOrder {
		b.orderJournaled(e.order)
	}
	out := next
	b.mu.Unlock()
	if err := s.settled(ctx, e.seq, 0); err != nil {
		return store.Wallet{}, err
	}
	return out, s.catchUp(ctx, e.seq)
}

// ledgerEntry numbers and encodes the ledger entry of a credit, with its
// cause; none for an opening credit of 0.
func (s *Store) ledgerEntry(e *entry, note, orderID string, c store.Cause) error {
	if e.kind == kindAccount && e.amount == 0 {
		return nil
	}
	id, err := nextID(s.ledgerSeq)
	if err != nil {
		return err
	}
	v, err := json.Marshal(store.LedgerEntry{ID: id, AccountID: e.account, Amount: e.amount, Note: note, OrderID: orderID,
		AdminToken: c.AdminToken, UserID: c.UserID, CreatedAt: time.Now().UTC()})
	e.ledgID, e.ledger = id, v
	return err
}

// OpenHolds lists every hold not yet settled.
func (s *Store) OpenHolds(ctx context.Context) ([]store.Hold, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	b := s.books
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]store.Hold, 0, len(b.holds))
	for _, h := range b.holds {
		out = append(out, *h)
	}
	return out, nil
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

// catchUp waits until Badger has every move journaled before the call.
func (s *Store) catchUp(ctx context.Context, seq uint64) error {
	b := s.books
	for b.applied.Load() < seq {
		b.appliedMu.Lock()
		ch := b.caughtUp
		b.appliedMu.Unlock()
		if b.applied.Load() >= seq {
			return nil
		}
		nudge(b.work)
		nudge(b.urge)
		select {
		case <-ch:
		case <-b.done:
			if b.applied.Load() >= seq {
				return nil
			}
			return store.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// seen waits until Badger has every move made so far: reads of rows and
// key usage call it first.
func (s *Store) seen(ctx context.Context) error {
	b := s.books
	b.mu.Lock()
	seq := b.seq
	b.mu.Unlock()
	return s.catchUp(ctx, seq)
}

// applyLoop moves journaled moves into Badger: it wakes on the first
// queued move, lets more gather for the apply delay (less when urged),
// and commits them together.
func (s *Store) applyLoop() {
	b := s.books
	defer close(b.done)
	timer := time.NewTimer(b.delay)
	timer.Stop()
	for {
		select {
		case <-b.work:
		case <-b.stop:
			s.applyQueued()
			return
		}
		timer.Reset(b.delay)
		select {
		case <-timer.C:
		case <-b.urge:
			timer.Stop()
		case <-b.stop:
			s.applyQueued()
			return
		}
		s.applyQueued()
	}
}

// applyQueued commits everything queued, retrying a failed commit until
// it succeeds or the store is crashing (tests). A commit waits while the
// disk has no room for it (space.go).
func (s *Store) applyQueued() {
	b := s.books
	b.mu.Lock()
	batch := b.queue
	b.queue, b.spare = b.spare[:0], nil
	discard := b.discard
	b.mu.Unlock()
	if discard {
		return
	}
	all := batch
	backoff := 10 * time.Millisecond
	for len(batch) > 0 {
		err := s.health.space.admit()
		n := 0
		if err == nil {
			n, err = s.applyEntries(batch)
			setErr(&s.health.applyErr, err)
		}
		if err != nil {
			if !errors.Is(err, store.ErrUnavailable) || backoff >= time.Second {
				s.log.Error("applying money moves to the store failed; retrying", "error", err, "backoff", backoff)
			}
			select {
			case <-time.After(backoff):
			case <-s.health.back:
			case <-b.stop:
				if b.discard {
					return
				}
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		s.health.space.wrote()
		last := batch[n-1].seq
		b.mu.Lock()
		b.inBadger(batch[:n])
		b.mu.Unlock()
		clear(batch[:n])
		batch = batch[n:]
		s.published(last)
	}
	b.mu.Lock()
	if b.spare == nil && cap(all) <= 4*maxBatch {
		b.spare = all[:0]
	}
	b.mu.Unlock()
}

// published records that Badger has every move up to seq.
func (s *Store) published(seq uint64) {
	b := s.books
	b.applied.Store(seq)
	if b.j != nil {
		b.mu.Lock()
		b.j.applied(seq)
		b.mu.Unlock()
	}
	b.appliedMu.Lock()
	close(b.caughtUp)
	b.caughtUp = make(chan struct{})
	b.appliedMu.Unlock()
}

// applyEntries commits a prefix of es in one transaction and returns its
// length: all of es, or less when the transaction would be too big.
func (s *Store) applyEntries(es []*entry) (int, error) {
	n := s.txnFit.prefix(es)
	for conflicts := 0; ; {
		err := s.commitEntries(es[:n])
		switch {
		case err == nil:
			return n, nil
		case errors.Is(err, badger.ErrTxnTooBig) && n > 1:
			n /= 2
		case errors.Is(err, badger.ErrConflict) && conflicts < maxConflictRetries:
			conflicts++
		default:
			return 0, err
		}
	}
}

// commitEntries writes es and the journal position in one transaction.
// A hold placed and settled within es is never written. Wallets and key
// usage are written once each, with their final values.
func (s *Store) commitEntries(es []*entry) error {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	set := &entrySetter{txn: txn, ents: make([]badger.Entry, 0, 6*len(es)+8)}
	placed := map[string]bool{}
	for _, e := range es {
		if e.kind == kindHold {
			placed[e.holdID] = true
		}
	}
	settled := map[string]bool{}
	for _, e := range es {
		if (e.kind == kindSettle || e.kind == kindFinish) && placed[e.holdID] {
			settled[e.holdID] = true
		}
	}
	wallets := map[string]*store.Wallet{}
	wallet := func(account string) (*store.Wallet, error) {
		if w, ok := wallets[account]; ok {
			return w, nil
		}
		w, refused, err := readWallet(txn, account)
		if err = errors.Join(refused, err); err != nil {
			return nil, fmt.Errorf("wallet of %q: %w", account, err)
		}
		wallets[account] = &w
		return &w, nil
	}
	keyUse := map[string]money.Nano{}
	for _, e := range es {
		var err error
		switch e.kind {
		case kindHold:
			var w *store.Wallet
			if w, err = wallet(e.account); err == nil {
				if *w, err = moved(*w, 0, e.amount); err == nil && !settled[e.holdID] {
					err = set.set(holdKey(e.holdID), e.holdVal)
				}
			}
		case kindSettle:
			err = s.writeSettlement(set, e, placed[e.holdID], wallet, keyUse)
		case kindFinish:
			err = s.writeSettlement(set, e, placed[e.holdID], wallet, keyUse)
			if err == nil {
				err = writeFinish(txn, e)
			}
		case kindAccount:
			wallets[e.account] = &store.Wallet{AccountID: e.account, Balance: e.amount}
			err = txn.Set(accountKey(e.account), e.acctVal)
			if err == nil && e.ledger != nil {
				err = txn.Set(ledgerKey(e.account, e.ledgID), e.ledger)
			}
		case kindCredit, kindOrder:
			if e.amount != 0 || e.kind == kindCredit {
				var w *store.Wallet
				if w, err = wallet(e.account); err == nil {
					if *w, err = moved(*w, e.amount, 0); err == nil {
						err = txn.Set(ledgerKey(e.account, e.ledgID), e.ledger)
					}
				}
			}
			if err == nil && e.kind == kindOrder {
				err = writeOrder(txn, e.order, e.orderVal)
			}
		default:
			err = fmt.Errorf("badgerstore: unknown journal record kind %q", e.kind)
		}
		if err != nil {
			return err
		}
	}
	if err := writeBooks(txn, es); err != nil {
		return err
	}
	for _, w := range wallets {
		if err := txn.Set(walletKey(w.AccountID), encodeWallet(*w)); err != nil {
			return err
		}
	}
	for k, add := range keyUse {
		key := keyUseKey(k)
		var use money.Nano
		err := get(txn, key, func(v []byte) (e error) {
			use, e = decodeNano(v)
			return e
		})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		total, ok := money.Add(use, add)
		if !ok {
			// A key's lifetime total is a report (and what a spend cap
			// compares with): past the range it stays at the maximum,
			// which no cap is above.
			s.log.Error("a key's usage total reached the largest amount; it stays there", "key_id", k)
			total = money.Max
		}
		if err := txn.Set(key, encodeNano(total)); err != nil {
			return err
		}
	}
	if err := txn.Set(journalKey, encodeSeq(es[len(es)-1].seq)); err != nil {
		return err
	}
	return txn.Commit()
}

func (s *Store) writeSettlement(set *entrySetter, e *entry, placedHere bool,
	wallet func(string) (*store.Wallet, error), keyUse map[string]money.Nano) error {
	if e.holdID != "" {
		w, err := wallet(e.account)
		if err != nil {
			return err
		}
		if *w, err = moved(*w, -e.charge, -e.amount); err != nil {
			return err
		}
		if !placedHere {
			if err := set.txn.Delete(holdKey(e.holdID)); err != nil {
				return err
			}
		}
		if e.charge != 0 && e.keyID != "" {
			use, ok := money.Add(keyUse[e.keyID], e.charge)
			if !ok {
				use = money.Max // see the key total's clamp in commitEntries
			}
			keyUse[e.keyID] = use
		}
	}
	if err := set.set(e.logKey, e.rowVal); err != nil {
		return err
	}
	for _, k := range e.idxKeys {
		if err := set.set(k, e.idxVal); err != nil {
			return err
		}
	}
	for _, k := range e.dimKeys {
		if err := set.set(k, e.dimVal); err != nil {
			return err
		}
	}
	for _, k := range e.refKeys {
		if err := set.set(k, nil); err != nil {
			return err
		}
	}
	return nil
}

// entrySetter sets keys in one transaction from Badger entries allocated
// many at a time (txn.Set makes one per key). An entry belongs to the
// transaction once set: a full chunk is left to it, never reused.
type entrySetter struct {
	txn  *badger.Txn
	ents []badger.Entry
}

func (w *entrySetter) set(k, v []byte) error {
	if len(w.ents) == cap(w.ents) {
		w.ents = make([]badger.Entry, 0, max(64, cap(w.ents)))
	}
	w.ents = append(w.ents, badger.Entry{Key: k, Value: v})
	return w.txn.SetEntry(&w.ents[len(w.ents)-1])
}

// replay turns journal records back into moves.
// run is the run that journaled them (its holds' owner).
func replayEntry(r record, run string) (*entry, error) {
	d := dec{s: string(r.payload)}
	e := &entry{seq: r.seq, kind: r.kind}
	switch r.kind {
	case kindHold:
		h, err := decodeHold(r.payload)
		if err != nil {
			return nil, err
		}
		e.account, e.amount, e.holdID, e.holdVal = h.AccountID, h.Amount, h.ID, r.payload
		e.causeTask, e.owner, e.at = h.TaskID, run, h.SubmittedAt
		return e, nil
	case kindSettle, kindFinish:
		e.holdID, e.account, e.keyID = d.str(), d.str(), d.str()
		e.amount, e.charge = money.Nano(d.int()), money.Nano(d.int())
		id := d.uint()
		e.rowVal = d.bytes()
		if r.kind == kindFinish {
			e.taskID, e.taskVal, e.taskBody = d.str(), d.bytes(), d.bytes()
		}
		if err := d.done(); err != nil {
			return nil, err
		}
		row, err := decodeRow(e.rowVal, id)
		if err != nil {
			return nil, err
		}
		settleKeys(e, &row, false, nil)
		setRowID(e, id)
		return e, nil
	case kindAccount:
		e.acctVal, e.account, e.amount = d.bytes(), d.str(), money.Nano(d.int())
		e.ledgID, e.ledger = d.uint(), d.bytes()
		if len(e.ledger) == 0 {
			e.ledger = nil
		}
	case kindCredit, kindOrder:
		e.account, e.amount, e.ledgID, e.ledger = d.str(), money.Nano(d.int()), d.uint(), d.bytes()
		if r.kind == kindOrder {
			e.orderVal = d.bytes()
			e.order = new(store.Order)
			if err := json.Unmarshal(e.orderVal, e.order); err != nil {
				return nil, fmt.Errorf("badgerstore: journaled order: %w", err)
			}
		}
	default:
		return nil, fmt.Errorf("badgerstore: unknown journal record kind %q", r.kind)
	}
	return e, d.done()
}
