package badgerstore

import (
	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/skl"
)

// txnFit sizes the applier's transactions up front. Badger refuses a
// transaction past a count and a size of entries derived from its
// memtable (txn.checkSize) only once they are set, so a batch that does
// not fit would be set, refused and set again in halves: under a burst
// (a queue of thousands of moves) about half the entries of a batch,
// each a map insert and a copy of its key, were set twice. Should the
// estimate fall short, applyEntries still halves a refused batch.
type txnFit struct {
	count, size int64 // Badger's limits, less a margin for the batch's own writes
	threshold   int64 // values at or over it go to the value log: a pointer in the batch
}

// Entries and bytes kept for what a batch writes once (the books'
// entry, the journal position) and for a move's writes estimated short.
const (
	fitSpareCount = 16
	fitSpareSize  = 4 << 10
)

func newTxnFit(o badger.Options) txnFit {
	size := 15 * o.MemTableSize / 100 // Badger's maxBatchSize (db.go)
	count := size / int64(skl.MaxNodeSize)
	return txnFit{count: count - fitSpareCount, size: size - fitSpareSize, threshold: o.ValueThreshold}
}

// prefix is how many of es, at least one, fit in one transaction, as
// commitEntries writes them: a hold placed and settled in the prefix
// costs nothing, each wallet and key total is written once.
func (f txnFit) prefix(es []*entry) int {
	var count, size int64
	add := func(k, v int) {
		count++
		size += entrySize(k, v, f.threshold)
	}
	placed := map[string]int64{} // hold id: what its write costs
	wallets, keys := map[string]bool{}, map[string]bool{}
	for i, e := range es {
		if !wallets[e.account] {
			wallets[e.account] = true
			add(len(pWallet)+len(e.account), 16)
		}
		switch e.kind {
		case kindHold:
			hold := entrySize(len(pHold)+len(e.holdID), len(e.holdVal), f.threshold)
			placed[e.holdID] = hold
			count++
			size += hold
		case kindSettle, kindFinish:
			if hold, ok := placed[e.holdID]; ok {
				count--
				size -= hold // never written
			} else if e.holdID != "" {
				add(len(pHold)+len(e.holdID), 0)
			}
			if e.holdID != "" && e.charge != 0 && e.keyID != "" && !keys[e.keyID] {
				keys[e.keyID] = true
				add(len(pKeyUse)+len(e.keyID), 8)
			}
		}
		e.txnCost(add)
		if count >= f.count || size >= f.size {
			return max(i, 1)
		}
	}
	return len(es)
}

// entrySize is what Badger counts for an entry (Entry.estimateSize, plus
// the version it appends to the key).
func entrySize(k, v int, threshold int64) int64 {
	if int64(v) >= threshold {
		v = 12 // a value pointer
	}
	return int64(k) + int64(v) + 2 + 10
}

// txnCost calls add with the key and value lengths of what e writes in
// Badger but its hold, its hold's deletion, its wallet and its key's
// usage total (prefix counts those once).
func (e *entry) txnCost(add func(k, v int)) {
	switch e.kind {
	case kindSettle, kindFinish:
		add(len(e.logKey), len(e.rowVal))
		for _, k := range e.idxKeys {
			add(len(k), len(e.idxVal))
		}
		for _, k := range e.dimKeys {
			add(len(k), len(e.dimVal))
		}
		for _, k := range e.refKeys {
			add(len(k), 0)
		}
		if e.kind == kindFinish {
			// writeFinish: the task, its answer, its job and open
			// entries deleted, its expiry entry.
			task := len(pTaskOpen) + len(e.account) + 1 + len(e.taskID) + tsLen
			add(task, len(e.taskVal))
			add(task, len(e.taskBody))
			add(task, 0)
			add(task, 0)
			add(task, 0)
		}
	case kindAccount:
		add(len(pAccount)+len(e.account), len(e.acctVal))
		add(len(pLedger)+len(e.account)+9, len(e.ledger))
	case kindCredit, kindOrder:
		add(len(pLedger)+len(e.account)+9, len(e.ledger))
		if e.order != nil {
			// writeOrder: the order, its two time indexes and its refs.
			order := len(pOrderAcct) + len(e.account) + 1 + tsLen + len(e.order.ID) + 64
			add(order, len(e.orderVal))
			for range 4 {
				add(order, 32)
			}
		}
	}
}
