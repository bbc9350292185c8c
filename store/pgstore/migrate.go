package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The schema's migrations, NNNN_name.sql, applied in order, each in its own
// transaction with its row in schema_migrations.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// Advisory lock keys (two-int form: 'toll', then the purpose).
const (
	lockSpace   = 0x746f6c6c
	lockMigrate = 1
	lockSweep   = 2
	lockTidy    = 3
)

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "migrations/"), ".sql")
		num, _, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("pgstore: migration %s: no version number", n)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

// SchemaVersion is the newest migration this binary carries.
func SchemaVersion() int {
	ms, _ := migrations()
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// Migrate applies the migrations the database lacks and returns their
// names; it is what Open runs, and `tollgate migrate` alone.
func Migrate(ctx context.Context, url string, log hclog.Logger) ([]string, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	pool, err := connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	return migrate(ctx, pool, log)
}

// migrate runs under a session advisory lock, so instances starting at
// once on an empty database take turns: the first migrates, the others
// find it done.
func migrate(ctx context.Context, pool *pgxpool.Pool, log hclog.Logger) ([]string, error) {
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, lockSpace, lockMigrate); err != nil {
		return nil, fmt.Errorf("pgstore: migration lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, $2)`, lockSpace, lockMigrate)
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY,
		name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("pgstore: schema_migrations: %w", err)
	}
	have, err := appliedVersions(ctx, conn.Conn())
	if err != nil {
		return nil, err
	}
	if err := newerThanBinary(have, ms); err != nil {
		return nil, err
	}
	var applied []string
	for _, m := range ms {
		if have[m.version] {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("pgstore: migration %s: %w", m.name, err)
		}
		log.Info("schema migrated", "migration", m.name)
		applied = append(applied, m.name)
	}
	return applied, nil
}

func appliedVersions(ctx context.Context, conn *pgx.Conn) (map[int]bool, error) {
	rows, err := conn.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("pgstore: read schema_migrations: %w", err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("pgstore: read schema_migrations: %w", err)
	}
	out := map[int]bool{}
	for _, v := range vs {
		out[int(v)] = true
	}
	return out, nil
}

// newerThanBinary refuses a database migrated by a newer tollgate: this
// binary would not know what its tables mean.
func newerThanBinary(have map[int]bool, ms []migration) error {
	known := map[int]bool{}
	for _, m := range ms {
		known[m.version] = true
	}
	for v := range have {
		if !known[v] {
			return fmt.Errorf("pgstore: the database has schema migration %d, which this tollgate does not know (it knows up to %d): it was migrated by a newer version; run that version", v, SchemaVersion())
		}
	}
	return nil
}

// checkSchema refuses a database that lacks a migration (NoMigrate).
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	have, err := appliedVersions(ctx, conn.Conn())
	if err != nil {
		return fmt.Errorf("%w (run `tollgate migrate` first)", err)
	}
	ms, err := migrations()
	if err != nil {
		return err
	}
	if err := newerThanBinary(have, ms); err != nil {
		return err
	}
	for _, m := range ms {
		if !have[m.version] {
			return fmt.Errorf("pgstore: the database lacks schema migration %s; run `tollgate migrate`", m.name)
		}
	}
	return nil
}
