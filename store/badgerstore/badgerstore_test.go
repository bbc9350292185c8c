package badgerstore

import (
	"errors"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/storetest"
)

func openTemp(t *testing.T, dir string, o Options) *Store {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Error(err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, t.TempDir(), Options{}) })
}

func TestConformanceStrict(t *testing.T) {
	if testing.Short() {
		t.Skip("strict mode fsyncs")
	}
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, t.TempDir(), Options{Strict: true}) })
}

func TestConformanceInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTemp(t, "", Options{InMemory: true}) })
}

func TestDurable(t *testing.T) {
	storetest.RunDurable(t, func(t *testing.T) func(t *testing.T) store.Store {
		dir := t.TempDir()
		// A short GC interval runs the maintenance loop alongside the calls.
		return func(t *testing.T) store.Store { return openTemp(t, dir, Options{GCInterval: time.Millisecond}) }
	})
}
