// Package testpg starts a throwaway PostgreSQL server for tests: initdb in
// a temporary directory, a random free port on 127.0.0.1, no Unix socket,
// durability off (fsync, synchronous commit) since the data dies with the
// test. Tests run as root in CI and PostgreSQL refuses to run as root, so
// then the server runs as the unprivileged user nobody.
//
// One server serves a whole test process; each test takes a fresh schema
// (Schema) or database (Database) of it. A package using it runs its tests
// through Main, which stops the server at the end; the server also dies
// with the test process (parent-death signal).
package testpg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-gw/tollgate/internal/testkind"
)

// Server is a running PostgreSQL.
type Server struct {
	// URL reaches the server's postgres database as superuser postgres.
	URL  string
	Port int
	dir  string
	cmd  *exec.Cmd
	log  *os.File
	bin  string
	cred *syscall.Credential
	args []string // postgres's arguments but the port
	// exited is closed when the server process has ended.
	exited chan struct{}
}

var (
	once    sync.Once
	shared  *Server
	errOnce error
	names   atomic.Int64
)

// Main runs the package's tests and stops the server if one was started.
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	return code
}

// Launch starts a server of the caller's own (a benchmark), stopped by
// its Stop. settings (name=value) are passed to the server after the
// tests' own, so they override them: a benchmark turns fsync back on.
func Launch(settings ...string) (*Server, error) { return start(settings...) }

// CreateDatabase creates a new empty database and returns its URL.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	c, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	u, _ := url.Parse(s.URL)
	u.Path = "/" + name
	return u.String(), nil
}

// PID is the postmaster's: its children are the backends (a benchmark
// counts their CPU).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Start returns the process's server, starting it on first use. Without
// PostgreSQL's binaries the test fails (make test installs them as root,
// see .ci/test-setup.sh), unless TOLLGATE_SKIP_POSTGRES is set outside CI:
// then it is skipped. In CI (CI=true) a test that cannot run fails.
func Start(t testing.TB) *Server {
	t.Helper()
	once.Do(func() { shared, errOnce = start() })
	Unavailable(t, errOnce)
	return shared
}

// Unavailable marks t as a PostgreSQL test (CI counts them: a skipped one
// fails it) and ends it when err, the server's start, failed: skipped
// when TOLLGATE_SKIP_POSTGRES is set outside CI, failed otherwise.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	testkind.Mark(t, testkind.Postgres)
	if err == nil {
		return
	}
	if os.Getenv("TOLLGATE_SKIP_POSTGRES") != "" && !testkind.InCI() {
		t.Skipf("postgres: %v", err)
	}
	t.Fatalf("postgres: %v", err)
}

// Schema creates a new empty schema and returns a URL whose connections
// use it (search_path), so a store opened on it sees only its own tables.
func Schema(t testing.TB) string {
	t.Helper()
	s := Start(t)
	name := fmt.Sprintf("t%d_%d", os.Getpid(), names.Add(1))
	s.exec(t, "CREATE SCHEMA "+name)
	return withParam(s.URL, "search_path", name)
}

// Database creates a new empty database and returns its URL.
func Database(t testing.TB) string {
	t.Helper()
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := s.CreateDatabase(ctx, fmt.Sprintf("db%d_%d", os.Getpid(), names.Add(1)))
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Diagnose())
	}
	return u
}

func withParam(raw, k, v string) string {
	u, _ := url.Parse(raw)
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *Server) exec(t testing.TB, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Diagnose())
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v\n%s", sql, err, s.Diagnose())
	}
}

// Diagnose says what the server was doing, for a test whose connection or
// call to it failed or hung: each session's state and wait
// (pg_stat_activity), then the tail of the server's log.
func (s *Server) Diagnose() string {
	var b strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, s.URL); err != nil {
		fmt.Fprintf(&b, "a new session to read pg_stat_activity: %v\n", err)
	} else {
		rows, err := c.Query(ctx, `SELECT pid, backend_type, coalesce(datname, ''), coalesce(state, ''),
			coalesce(wait_event_type, ''), coalesce(wait_event, ''), coalesce(now() - backend_start, '0'::interval)::text,
			left(query, 120) FROM pg_stat_activity ORDER BY backend_start`)
		if err != nil {
			fmt.Fprintf(&b, "pg_stat_activity: %v\n", err)
		} else {
			n := 0
			for rows.Next() {
				var pid int32
				var typ, db, state, waitType, wait, age, query string
				if err := rows.Scan(&pid, &typ, &db, &state, &waitType, &wait, &age, &query); err == nil {
					fmt.Fprintf(&b, "%d %s db=%s state=%s wait=%s/%s for %s: %s\n", pid, typ, db, state, waitType, wait, age, query)
					n++
				}
			}
			rows.Close()
			fmt.Fprintf(&b, "(%d sessions)\n", n)
		}
		c.Close(ctx)
	}
	if s.log != nil {
		if log, err := os.ReadFile(s.log.Name()); err == nil {
			fmt.Fprintf(&b, "server log:\n%s\n", tail(string(log), 4000))
		}
	}
	return b.String()
}

// Stop ends the server and removes its directory.
func (s *Server) Stop() {
	if s.cmd != nil {
		// SIGQUIT: immediate shutdown; nothing here needs to survive.
		_ = s.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	if s.log != nil {
		s.log.Close()
	}
	os.RemoveAll(s.dir)
}

// binDir finds PostgreSQL's server binaries: $TOLLGATE_POSTGRES_BIN,
// Debian's /usr/lib/postgresql/<version>/bin (15 first), or the PATH.
func binDir() (string, error) {
	if d := os.Getenv("TOLLGATE_POSTGRES_BIN"); d != "" {
		return d, nil
	}
	cands := []string{"/usr/lib/postgresql/15/bin"}
	if ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin"); len(ms) > 0 {
		cands = append(cands, ms...)
	}
	for _, d := range cands {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, postgres) in /usr/lib/postgresql/*/bin or on the PATH. " +
		"Install them (Debian or Ubuntu: sudo apt-get install postgresql-15; macOS: brew install postgresql@15), " +
		"or set TOLLGATE_POSTGRES_BIN to the folder holding initdb and postgres; " +
		"on your own machine TOLLGATE_SKIP_POSTGRES=1 skips these tests (CI never does). " +
		"As root with apt-get, make test installs postgresql-15 itself")
}

// install installs Debian's postgresql-15 when the tests run as root on a
// machine with apt-get (a fresh CI box), one test process at a time.
func install() error {
	if os.Geteuid() != 0 {
		return errors.New("not root")
	}
	apt, err := exec.LookPath("apt-get")
	if err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "tollgate-testpg-install.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	if _, err := binDir(); err == nil {
		return nil // another test process installed it meanwhile
	}
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := (&exec.Cmd{Path: apt, Args: []string{apt, "install", "-y", "-q", "postgresql-15"}, Env: env}).CombinedOutput(); err != nil {
		upd := &exec.Cmd{Path: apt, Args: []string{apt, "update", "-q"}, Env: env}
		if uout, uerr := upd.CombinedOutput(); uerr != nil {
			return fmt.Errorf("apt-get update: %v\n%s", uerr, tail(string(uout), 1000))
		}
		if out, err = (&exec.Cmd{Path: apt, Args: []string{apt, "install", "-y", "-q", "postgresql-15"}, Env: env}).CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get install postgresql-15: %v\n%s", err, tail(string(out), 1000))
		}
	}
	return nil
}

// runAs is the credential the server runs under: nobody when the tests
// run as root, else the current user (nil).
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs an unprivileged user to run as, and there is no user nobody: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func start(settings ...string) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		if ierr := install(); ierr != nil {
			return nil, fmt.Errorf("%v (installing failed: %v)", err, ierr)
		}
		if bin, err = binDir(); err != nil {
			return nil, err
		}
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "testpg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	fail := func(err error) (*Server, error) { s.Stop(); return nil, err }
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fail(err)
		}
	}
	data := filepath.Join(dir, "data")
	if err := initData(bin, cred, data); err != nil {
		return fail(err)
	}
	if s.log, err = os.Create(filepath.Join(dir, "server.log")); err != nil {
		return fail(err)
	}
	s.bin, s.cred = bin, cred
	s.args = []string{"-D", data,
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=500", "-c", "shared_buffers=128MB", "-c", "max_locks_per_transaction=256",
		"-c", "log_min_messages=warning", "-c", "logging_collector=off",
		"-c", "log_lock_waits=on"} // a wait past a second is in the log Diagnose shows
	for _, kv := range settings {
		s.args = append(s.args, "-c", kv)
	}
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return fail(err)
		}
		err = s.run(port)
		if err == nil {
			return s, nil
		}
		if attempt == 2 {
			return fail(err)
		}
	}
}

// run starts postgres on port and waits until it takes connections.
func (s *Server) run(port int) error {
	s.Port = port
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	s.cmd = exec.Command(filepath.Join(s.bin, "postgres"), append(s.args, "-p", strconv.Itoa(port))...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.Dir = s.dir
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return err
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(s.cmd, s.exited)
	err := s.wait(30 * time.Second)
	if err == nil {
		return nil
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
	b, _ := os.ReadFile(s.log.Name())
	return fmt.Errorf("postgres did not start: %v\n%s", err, tail(string(b), 2000))
}

// Halt stops the server as an operator would (a fast shutdown: sessions
// are ended, transactions rolled back) and keeps its data for Resume.
func (s *Server) Halt() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Resume starts a halted server again on its data and its port.
func (s *Server) Resume() error { return s.run(s.Port) }

// initData makes an empty cluster in data: a copy of a template made once
// per machine by initdb (which takes seconds; a copy, a fraction).
func initData(bin string, cred *syscall.Credential, data string) error {
	tmpl := filepath.Join(os.TempDir(), fmt.Sprintf("tollgate-testpg-template-%d", os.Geteuid()))
	lock, err := os.OpenFile(tmpl+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(tmpl, "data", "PG_VERSION")); err != nil {
		os.RemoveAll(tmpl)
		if err := os.Mkdir(tmpl, 0o755); err != nil {
			return err
		}
		if cred != nil {
			if err := os.Chown(tmpl, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
		initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(tmpl, "data"), "-U", "postgres",
			"--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
		initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		initdb.Env = append(os.Environ(), "LC_ALL=C")
		initdb.Dir = tmpl
		if out, err := initdb.CombinedOutput(); err != nil {
			os.RemoveAll(tmpl)
			return fmt.Errorf("initdb: %v\n%s", err, out)
		}
	}
	// cp -a keeps the owner (nobody) and the 0700 mode PostgreSQL wants.
	if out, err := exec.Command("cp", "-a", filepath.Join(tmpl, "data"), data).CombinedOutput(); err != nil {
		return fmt.Errorf("copy the template cluster: %v\n%s", err, out)
	}
	return nil
}

// wait polls until the server accepts a connection or the process exits.
func (s *Server) wait(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := pgx.Connect(ctx, s.URL)
		if err == nil {
			c.Close(ctx)
			cancel()
			return nil
		}
		cancel()
		select {
		case <-s.exited:
			return errors.New("the server exited")
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("timed out")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}

// GroupCPU is the user+system CPU of the process root and its children
// (the PostgreSQL server and its backends, which start sessions of their
// own), from /proc. A backend that exited takes its CPU with it; the
// pool's connections live throughout.
func GroupCPU(root int) time.Duration {
	if root <= 0 {
		return 0
	}
	ents, _ := os.ReadDir("/proc")
	tick := time.Second / 100 // USER_HZ
	var total time.Duration
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces) in parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		pid, _ := strconv.Atoi(e.Name())
		if ppid, _ := strconv.Atoi(f[1]); pid != root && ppid != root {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+stime) * tick
	}
	return total
}
