package pgstore

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/tollgate-gw/tollgate/internal/testpg"
	"github.com/tollgate-gw/tollgate/store"
	"github.com/tollgate-gw/tollgate/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }

// openURL opens a store on url, closed at the test's end.
func openURL(t *testing.T, url string, o Options) *Store {
	t.Helper()
	o.URL = url
	s, err := Open(context.Background(), o)
	if err != nil {
		// Once, under load, the first ping waited out its 30 s: say what
		// the server was doing.
		t.Fatalf("%v\n%s", err, testpg.Start(t).Diagnose())
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Error(err)
		}
	})
	return s
}

// TestConformance runs every role's suite, each subtest on a schema of
// its own in one server.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openURL(t, testpg.Schema(t), Options{}) })
}

func TestDurable(t *testing.T) {
	storetest.RunDurable(t, func(t *testing.T) func(t *testing.T) store.Store {
		url := testpg.Schema(t)
		return func(t *testing.T) store.Store { return openURL(t, url, Options{}) }
	})
}

func TestDurableTasks(t *testing.T) {
	url := testpg.Schema(t)
	storetest.RunDurableTasks(t, func(t *testing.T) store.Store { return openURL(t, url, Options{}) })
}
