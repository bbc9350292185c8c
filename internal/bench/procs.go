package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// process is a child the harness started and must stop.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // valid once done is closed
	logf *os.File
}

// start runs bin with args; its stderr (and stdout, once ready has seen
// what it waits for) go to logPath. ready, when set, reads stdout lines
// until it returns true or the process ends.
func start(name, bin string, args, env []string, logPath string, ready func(line string) bool, timeout time.Duration) (*process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = logf
	// The children die with the harness, even when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stdout io.ReadCloser
	if ready != nil {
		if stdout, err = cmd.StdoutPipe(); err != nil {
			logf.Close()
			return nil, err
		}
	} else {
		cmd.Stdout = logf
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), logf: logf}
	if ready == nil {
		go p.wait()
		return p, nil
	}
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if !signalled && ready(line) {
				signalled = true
				close(found)
			}
		}
		// Reading to EOF before Wait, as os/exec requires for pipes.
		p.wait()
	}()
	select {
	case <-found:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before it was ready (%v); its log: %s\n%s", name, p.err, logPath, tail(logPath))
	case <-time.After(timeout):
		p.stop()
		return nil, fmt.Errorf("%s not ready after %s; its log: %s\n%s", name, timeout, logPath, tail(logPath))
	}
}

func (p *process) wait() {
	p.err = p.cmd.Wait()
	p.logf.Close()
	close(p.done)
}

// stop asks the process to end (SIGTERM), then kills it after 15 s.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// alive reports an early exit as an error.
func (p *process) alive() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v", p.name, p.err)
	default:
		return nil
	}
}

// tail is the end of a log file, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// freePort reserves a loopback port and releases it for a child to bind.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitTCP waits until addr accepts connections or p exits.
func waitTCP(ctx context.Context, addr string, p *process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if err := p.alive(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: nothing listening on %s after %s", p.name, addr, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// listenLine matches the gateway's "Tollgate listening on http://ADDR".
func listenLine(line string) (string, bool) {
	const prefix = "Tollgate listening on "
	i := strings.Index(line, prefix)
	if i < 0 {
		return "", false
	}
	return strings.TrimSpace(line[i+len(prefix):]), true
}

// admin is a client of the gateway's /admin/v1.
type admin struct {
	base, token string
	c           *http.Client
}

func (a admin) post(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/admin/v1"+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST /admin/v1%s: status %d: %s", path, resp.StatusCode, truncate(rb))
	}
	return json.Unmarshal(rb, out)
}

// benchKey is the account and key the gateway side of the run uses.
type benchKey struct {
	AccountID string
	KeyID     string
	Key       string
	Prefix    string
	Name      string
}

func (a admin) createKey(ctx context.Context, credit string) (benchKey, error) {
	var acct struct {
		ID string `json:"id"`
	}
	if err := a.post(ctx, "/accounts", map[string]any{"name": "bench", "initial_credit": credit}, &acct); err != nil {
		return benchKey{}, err
	}
	if acct.ID == "" {
		return benchKey{}, errors.New("admin: account created without an id")
	}
	var key struct {
		ID     string `json:"id"`
		Key    string `json:"key"`
		Prefix string `json:"prefix"`
		Name   string `json:"name"`
	}
	if err := a.post(ctx, "/accounts/"+acct.ID+"/keys", map[string]any{"name": "bench"}, &key); err != nil {
		return benchKey{}, err
	}
	if key.Key == "" {
		return benchKey{}, errors.New("admin: key created without its raw value")
	}
	return benchKey{AccountID: acct.ID, KeyID: key.ID, Key: key.Key, Prefix: key.Prefix, Name: key.Name}, nil
}

// Child is a process a harness outside this package (the soak) started
// through the bench's own start, stop and early-exit checks.
type Child struct{ p *process }

// StartChild runs bin as start does: ready, when set, reads its stdout
// lines until it returns true, within timeout.
func StartChild(name, bin string, args, env []string, logPath string, ready func(line string) bool, timeout time.Duration) (*Child, error) {
	p, err := start(name, bin, args, env, logPath, ready, timeout)
	if err != nil {
		return nil, err
	}
	return &Child{p}, nil
}

// Stop sends SIGTERM, then SIGKILL after 15 s.
func (c *Child) Stop() { c.p.stop() }

// PID is the child's process id.
func (c *Child) PID() int { return c.p.pid() }

// Alive reports an early exit as an error.
func (c *Child) Alive() error { return c.p.alive() }
