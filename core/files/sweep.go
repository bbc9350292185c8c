package files

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"gocloud.dev/gcerrors"
)

// staleTemp is how old a leftover temporary file of the directory driver
// must be before the sweep removes it. fileblob writes <key>.<hex>.tmp
// beside the final file and renames it on success; a crash leaves it behind.
// An upload in progress keeps touching its file, so an hour of silence
// means it is dead.
const staleTemp = time.Hour

// Sweep deletes every file past its retention and leftover temporary files,
// and returns how many files it deleted. It decides from the listing alone
// (the expiry is in the id) and leaves keys it does not recognise alone, so
// a bucket may be shared with other data. A failed delete does not stop the
// sweep; the errors are returned together.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	now := s.now()
	it := s.bucket.List(nil)
	var n int
	var errs []error
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, err)
			break
		}
		if obj.IsDir {
			continue
		}
		exp, ok := parseID(obj.Key)
		switch {
		case ok && expired(exp, now):
		case !ok && isTemp(obj.Key) && now.Sub(obj.ModTime) > staleTemp:
		default:
			continue
		}
		if err := s.bucket.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			errs = append(errs, err)
			continue
		}
		if ok {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// isTemp reports whether key is fileblob's temporary file of one of ours.
func isTemp(key string) bool {
	if !strings.HasSuffix(key, ".tmp") {
		return false
	}
	i := strings.IndexByte(key, '.')
	_, ok := parseID(key[:i])
	return ok
}

// Run sweeps once at once and then every Options.SweepEvery, until ctx ends.
func (s *Store) Run(ctx context.Context) {
	t := time.NewTicker(s.sweepEvery)
	defer t.Stop()
	for {
		n, err := s.Sweep(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.log.Error("sweep", "deleted", n, "error", err)
		case n > 0:
			s.log.Debug("sweep", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
