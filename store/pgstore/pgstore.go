// Package pgstore is the store.Store on PostgreSQL, for several gateway
// instances sharing one state: one wallet, one ledger, one set of limits,
// idempotency records and task leases.
//
// The database row is the one authority on money: a hold is one guarded
// UPDATE of the wallet (balance minus held must cover it) or nothing, and a
// settlement deletes its hold, charges the wallet, writes the row and adds
// to the key's usage in one statement, so a second settlement finds no hold.
// Nothing in memory decides whether a call may run. Each instance renews a
// lease (instances table) while it runs; its holds and in-flight counts
// count as live for as long as the lease, and only the holds of lapsed
// leases are swept (store.Shared). Migrations are embedded and applied at
// open under an advisory lock, so instances may start together on an empty
// database. docs/store.md says when to choose it over Badger.
package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tollgate-gw/tollgate/store"
)

// Options configure Open.
type Options struct {
	// URL is the connection string: postgres://user:pass@host:port/db?...
	// pgxpool's settings (pool_max_conns, ...) may ride in it.
	URL string
	// Logger receives the store's own messages; nil discards them.
	Logger hclog.Logger
	// Lease is how long this instance's holds and in-flight counts stay
	// live after its last renewal (renewed every third of it); another
	// instance releases them once it has lapsed. Default 15 s.
	Lease time.Duration
	// Instance names this process in holds and in-flight counts; empty gives a new
	// unique name (hostname and random bits).
	Instance string
	// NoMigrate refuses a database whose schema is behind this binary
	// instead of migrating it.
	NoMigrate bool
	// CachePoll is how often the change counters that drop the key and
	// account caches are read; default 250 ms.
	CachePoll time.Duration
}

// DefaultLease is Options.Lease when unset.
const DefaultLease = 15 * time.Second

// defaultMaxConns is the pool size when the URL does not say: a gateway
// at concurrency 64 makes a few statements per call, each short.
const defaultMaxConns = 32

// Store is a store.Store on one PostgreSQL database.
type Store struct {
	pool     *pgxpool.Pool
	log      hclog.Logger
	instance string
	lease    time.Duration

	closed atomic.Bool
	stop   chan struct{}
	wg     sync.WaitGroup

	cache  *authCache
	doubts doubts
}

// Open connects, migrates the schema (unless NoMigrate), registers this
// instance's lease and starts renewing it.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.CachePoll <= 0 {
		o.CachePoll = 250 * time.Millisecond
	}
	if o.Instance == "" {
		o.Instance = NewInstanceName()
	}
	pool, err := connect(ctx, o.URL)
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool, log: o.Logger, instance: o.Instance, lease: o.Lease, stop: make(chan struct{})}
	s.cache = newAuthCache(o.CachePoll)
	if err := s.prepare(ctx, o); err != nil {
		pool.Close()
		return nil, err
	}
	s.wg.Add(2)
	go s.heartbeat()
	go s.pollChanges()
	return s, nil
}

func (s *Store) prepare(ctx context.Context, o Options) error {
	if o.NoMigrate {
		if err := checkSchema(ctx, s.pool); err != nil {
			return err
		}
	} else if _, err := migrate(ctx, s.pool, s.log); err != nil {
		return err
	}
	if err := s.renew(ctx); err != nil {
		return fmt.Errorf("pgstore: register instance %s: %w", s.instance, err)
	}
	return s.cache.poll(ctx, s.pool)
}

// connect opens a pool on url, checking that the server answers.
func connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	if strings.TrimSpace(url) == "" {
		return nil, errors.New("pgstore: no database URL")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: database URL: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "tollgate"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: cannot reach the database at %s: %w", redactURL(url), err)
	}
	return pool, nil
}

// redactURL hides the password of a connection string in messages.
func redactURL(u string) string {
	cfg, err := pgconn.ParseConfig(u)
	if err != nil {
		return "(an unparsable URL)"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

// NewInstanceName is a unique name for this process: host and random bits.
func NewInstanceName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	return host + "-" + hex.EncodeToString(b[:])
}

// Instance is the name this store's holds and in-flight counts carry.
func (s *Store) Instance() string { return s.instance }

// Close stops the lease renewal and ends the lease at once (the holds of
// calls still in flight become another instance's to release), then closes
// the pool. Later calls return store.ErrClosed.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return store.ErrClosed
	}
	close(s.stop)
	s.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.pool.Exec(ctx, `UPDATE instances SET lease_until = now() WHERE id = $1`, s.instance)
	s.pool.Close()
	if err != nil {
		return fmt.Errorf("pgstore: end the lease: %w", err)
	}
	return nil
}

// enter refuses a call on a cancelled context or a closed store.
func (s *Store) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// fail turns a driver error into the store's: unique violations are
// ErrExists, range and check violations ErrOutOfRange, no rows
// ErrNotFound, anything after Close ErrClosed.
func (s *Store) fail(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505": // unique_violation
			return fmt.Errorf("pgstore: %s: %w", pe.ConstraintName, store.ErrExists)
		case pe.Code == "23514", pe.Code == "22003": // check_violation, numeric_value_out_of_range
			return fmt.Errorf("pgstore: %s: %w", pe.Message, store.ErrOutOfRange)
		case strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "57P"), pe.Code == "53300":
			// Connection exceptions, a server shutting down, no free
			// connection slot: the database is not there to record money.
			return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
	}
	return err
}

// Check implements store.Checker: the database answers and this
// instance's lease runs (without it no hold can be placed).
func (s *Store) Check(ctx context.Context) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	var live bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM instances WHERE id = $1 AND lease_until > now())`, s.instance).Scan(&live)
	if err != nil {
		if errors.Is(s.fail(err), store.ErrClosed) {
			return store.ErrClosed
		}
		// The driver's error may name a socket file or the database's
		// user: the log has it, /readyz a plain line.
		s.log.Debug("the store's check failed", "error", err)
		return fmt.Errorf("%w: the database does not answer", store.ErrUnavailable)
	}
	if !live {
		return fmt.Errorf("%w: instance %s: its lease in the store has lapsed", store.ErrUnavailable, s.instance)
	}
	return nil
}

// Stats implements store.StatsReporter: the holds this instance has open.
func (s *Store) Stats() store.Stats {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var n int
	if s.enter(ctx) == nil {
		_ = s.pool.QueryRow(ctx, `SELECT count(*) FROM holds WHERE owner = $1`, s.instance).Scan(&n)
	}
	return store.Stats{OpenHolds: n}
}

// execOne runs a statement that must touch a row: ErrNotFound when it
// touches none (an unknown id, an insert's missing account).
func (s *Store) execOne(ctx context.Context, sql string, args ...any) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return s.fail(err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// tx runs fn in a transaction, committed when fn returns nil.
func (s *Store) tx(ctx context.Context, fn func(pgx.Tx) error) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	return s.fail(pgx.BeginFunc(ctx, s.pool, fn))
}

// zeroTime stands for Go's zero time in a bigint time column.
const zeroTime = math.MinInt64

var (
	minTime = time.Unix(0, math.MinInt64+1)
	maxTime = time.Unix(0, math.MaxInt64)
)

// ns is t as Unix nanoseconds; times beyond the years 1678..2262 are
// clamped to that range (a key expiring in 3000 expires in 2262).
func ns(t time.Time) int64 {
	switch {
	case t.IsZero():
		return zeroTime
	case t.Before(minTime):
		return math.MinInt64 + 1
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

func fromNS(n int64) time.Time {
	if n == zeroTime {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// nsPtr is an optional time: NULL when absent.
func nsPtr(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	n := ns(*t)
	return &n
}

func fromNSPtr(n *int64) *time.Time {
	if n == nil {
		return nil
	}
	t := fromNS(*n)
	return &t
}

// txt makes a string storable as PostgreSQL text, which holds neither NUL
// nor invalid UTF-8: both become U+FFFD (docs/decisions.md).
func txt(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

func txts(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = txt(s)
	}
	return out
}

// checkID refuses an id text cannot hold unchanged (NUL, invalid UTF-8),
// or an empty one: ids are keys, so they are never rewritten.
func checkID(what, id string) error {
	if id == "" || strings.IndexByte(id, 0) >= 0 || !utf8.ValidString(id) {
		return fmt.Errorf("pgstore: invalid %s id %q", what, id)
	}
	return nil
}

// validID reports whether a lookup by id can find anything.
func validID(id string) bool { return checkID("", id) == nil }

var (
	_ store.Store         = (*Store)(nil)
	_ store.Checker       = (*Store)(nil)
	_ store.StatsReporter = (*Store)(nil)
)
