package pgstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tollgate-gw/tollgate/store"
)

// A hold whose statement failed with the link to the database lost may
// have committed all the same (the commit landed, its answer did not).
// The caller was told it failed and refused its call, so such a hold has
// no call to settle it and would stay open until this instance's lease
// lapses. It is kept here and released, without a row (the refused call
// writes its own), as soon as the database answers.
type doubts struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// maxDoubts bounds the holds kept in doubt; past it the oldest are left
// to the lease's sweep (after this instance stops).
const maxDoubts = 10000

// doubt records hold id when err says the database may not have answered.
func (s *Store) doubt(id string, err error) {
	if !errors.Is(err, store.ErrUnavailable) {
		return
	}
	s.doubts.mu.Lock()
	defer s.doubts.mu.Unlock()
	if s.doubts.ids == nil {
		s.doubts.ids = map[string]struct{}{}
	}
	if len(s.doubts.ids) < maxDoubts {
		s.doubts.ids[id] = struct{}{}
	}
}

// inDoubt is the number of holds waiting to be released.
func (s *Store) inDoubt() int {
	s.doubts.mu.Lock()
	defer s.doubts.mu.Unlock()
	return len(s.doubts.ids)
}

// releaseDoubts releases every hold in doubt that exists, each with its
// wallet's held amount, and forgets those done.
func (s *Store) releaseDoubts(ctx context.Context) error {
	s.doubts.mu.Lock()
	ids := make([]string, 0, len(s.doubts.ids))
	for id := range s.doubts.ids {
		ids = append(ids, id)
	}
	s.doubts.mu.Unlock()
	released := 0
	for _, id := range ids {
		// The release is an entry in the books, in the same statement.
		tag, err := s.pool.Exec(ctx, `
			WITH h AS (DELETE FROM holds WHERE id = $1 AND owner = $2 RETURNING id, account_id, amount, task_id),
			w AS (UPDATE wallets SET held = wallets.held - h.amount FROM h WHERE wallets.account_id = h.account_id)
			INSERT INTO book (kind, account_id, amount, hold_id, request_id, task_id, owner, note, created_at)
			SELECT 'release', account_id, amount, id, id, task_id, $2, 'its call was refused: the answer to its placing was lost', $3 FROM h`,
			id, s.instance, ns(time.Now()))
		if err != nil {
			return err
		}
		released += int(tag.RowsAffected())
		s.doubts.mu.Lock()
		delete(s.doubts.ids, id)
		s.doubts.mu.Unlock()
	}
	if released > 0 {
		s.log.Warn("released holds placed while the database's answer was lost (their calls were refused)", "count", released)
	}
	return nil
}
