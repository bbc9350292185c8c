package badgerstore

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testkind"
	"github.com/tollgate-gw/tollgate/store"
)

// The store's data survives a real SIGKILL of the process writing it, at
// any point: a child process (this test binary, run as killChild) makes
// money moves from many goroutines and acknowledges each on stdout once
// the call returned; the test kills it with SIGKILL after a different
// number of acknowledgements each round, then opens the data itself and
// checks every acknowledged move is there, once, and the books balance to
// the nano: balance = credits − row costs, held = open holds, key usage =
// the key's row costs. The child's next round opens what the kill left,
// so Badger's own recovery after a kill (not a clean close) and the
// journal replay are exercised, a kill during that replay included.
func TestMoneyMovesSurviveSIGKILL(t *testing.T) {
	testkind.Mark(t, testkind.SIGKILL)
	if testing.Short() {
		t.Skip("runs child processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 10))
	acked := newAcks()
	const rounds = 6
	for round := range rounds {
		// The first round must create the account; later ones may be
		// killed anywhere, even before the first move (during the open).
		killAfter := 20 + rng.IntN(400)
		if round == rounds-1 {
			killAfter = 0 // killed while it opens and replays
		}
		runChild(t, dir, round, killAfter, acked)
		checkAfterKill(t, dir, acked)
	}
}

// ack kinds the child prints, one per line: "<kind> <hold or ledger id> <amount>".
const (
	ackAccount = "A"
	ackCredit  = "C"
	ackHold    = "H"
	ackSettle  = "S"
)

type acks struct {
	credits []money.Nano // opening credit and credits, acknowledged
	holds   map[string]money.Nano
	settled map[string]money.Nano // hold id -> charge
}

func newAcks() *acks {
	return &acks{holds: map[string]money.Nano{}, settled: map[string]money.Nano{}}
}

// runChild runs one child until it has acknowledged killAfter moves (0: a
// short random time after it starts), then SIGKILLs it.
func runChild(t *testing.T, dir string, round, killAfter int, a *acks) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), "TOLLGATE_KILL_CHILD="+dir, "TOLLGATE_KILL_ROUND="+strconv.Itoa(round))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	kill := func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
	}
	if killAfter == 0 {
		time.AfterFunc(time.Duration(rand.IntN(60))*time.Millisecond, kill)
	}
	n := 0
	deadline := time.After(30 * time.Second)
read:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				break read
			}
			if a.record(t, line) {
				n++
			}
			if killAfter > 0 && n == killAfter {
				kill()
			}
		case <-deadline:
			kill()
			t.Fatalf("round %d: the child made %d moves in 30s; stderr:\n%s", round, n, stderr.String())
		}
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("round %d: the child ended with %v before its kill; stderr:\n%s", round, err, stderr.String())
	}
	t.Logf("round %d: killed after %d acknowledged moves", round, n)
}

func (a *acks) record(t *testing.T, line string) bool {
	f := strings.Fields(line)
	if len(f) != 3 {
		return false // the test framework's own output
	}
	amount, err := money.Parse(f[2])
	if err != nil {
		t.Fatalf("child line %q: %v", line, err)
	}
	switch f[0] {
	case ackAccount, ackCredit:
		a.credits = append(a.credits, amount)
	case ackHold:
		a.holds[f[1]] = amount
	case ackSettle:
		a.settled[f[1]] = amount
	default:
		return false
	}
	return true
}

// checkAfterKill opens what the kill left and checks the books.
func checkAfterKill(t *testing.T, dir string, a *acks) {
	t.Helper()
	ctx := t.Context()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("open after the kill: %v", err)
	}
	defer s.Close()
	if len(a.credits) == 0 {
		return // killed before the account existed
	}
	w, err := s.GetWallet(ctx, killAccount)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := s.ListLedger(ctx, killAccount)
	if err != nil {
		t.Fatal(err)
	}
	if len(ledger) < len(a.credits) {
		t.Fatalf("%d ledger entries, but %d credits were acknowledged", len(ledger), len(a.credits))
	}
	var credited money.Total
	for _, e := range ledger {
		credited.Add(e.Amount)
	}
	rows, err := s.QueryLogs(ctx, store.LogQuery{AccountID: killAccount})
	if err != nil {
		t.Fatal(err)
	}
	var charged money.Total
	rowOf := map[string]store.LogRow{}
	for _, r := range rows {
		if _, dup := rowOf[r.RequestID]; dup {
			t.Fatalf("two rows for %s", r.RequestID)
		}
		rowOf[r.RequestID] = r
		charged.Add(r.Cost)
	}
	holds, err := s.OpenHolds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var held money.Total
	open := map[string]bool{}
	for _, h := range holds {
		held.Add(h.Amount)
		open[h.ID] = true
		if _, ok := rowOf[h.ID]; ok {
			t.Fatalf("hold %s is open and has a row", h.ID)
		}
	}
	for id, charge := range a.settled {
		r, ok := rowOf[id]
		if !ok || r.Cost != charge {
			t.Fatalf("acknowledged settlement %s (%s): row %+v, %v", id, charge, r, ok)
		}
	}
	for id := range a.holds {
		if _, ok := rowOf[id]; !ok && !open[id] {
			t.Fatalf("acknowledged hold %s is neither open nor settled", id)
		}
	}
	// balance = credits − charges, held = the open holds, to the nano.
	if got := money.TotalOf(w.Balance, nanoOf(t, charged)); got.Cmp(credited) != 0 {
		t.Fatalf("balance %s + charged %s = %s, credited %s", w.Balance, charged, got, credited)
	}
	if w.Held != nanoOf(t, held) {
		t.Fatalf("held %s, open holds %s", w.Held, held)
	}
	if u, err := s.KeyUsage(ctx, killKey); err != nil && len(rows) > 0 || err == nil && u != nanoOf(t, charged) {
		t.Fatalf("key usage %s, %v; rows charged %s", u, err, charged)
	}
}

func nanoOf(t *testing.T, tot money.Total) money.Nano {
	t.Helper()
	n, ok := tot.Nano()
	if !ok {
		t.Fatalf("total %s out of range", tot)
	}
	return n
}

const (
	killAccount = "kill-acct"
	killKey     = "kill-key"
)

// TestKillChild is the child of TestMoneyMovesSurviveSIGKILL; it runs only
// when that test starts it, and never ends by itself.
func TestKillChild(t *testing.T) {
	dir := os.Getenv("TOLLGATE_KILL_CHILD")
	if dir == "" {
		t.Skip("the child process of TestMoneyMovesSurviveSIGKILL")
	}
	round := os.Getenv("TOLLGATE_KILL_ROUND")
	ctx := context.Background()
	s, err := Open(dir, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex // one line per write, whole
	ack := func(kind, id string, n money.Nano) {
		mu.Lock()
		fmt.Printf("%s %s %s\n", kind, id, n)
		mu.Unlock()
	}
	if round == "0" {
		if err := s.CreateAccount(ctx, store.Account{ID: killAccount, Name: "k", Status: store.AccountActive}, money.Credits(1000), "opening"); err != nil {
			fmt.Fprintln(os.Stderr, "account:", err)
			os.Exit(2)
		}
		ack(ackAccount, killAccount, money.Credits(1000))
	}
	for g := range 24 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(g)))
			for i := 0; ; i++ {
				if g == 0 && i%5 == 0 {
					amount := money.Nano(1 + rng.Int64N(int64(money.Credits(1))))
					if _, err := s.Credit(ctx, killAccount, amount, "top-up"); err != nil {
						fmt.Fprintln(os.Stderr, "credit:", err)
						os.Exit(2)
					}
					ack(ackCredit, "-", amount)
					continue
				}
				id := fmt.Sprintf("r%s-g%d-%d", round, g, i)
				amount := money.Nano(rng.Int64N(int64(money.Credits(1)) / 100))
				h := store.Hold{ID: id, AccountID: killAccount, KeyID: killKey, Model: "m", Amount: amount, SubmittedAt: time.Now()}
				if _, err := s.PlaceHold(ctx, h); err != nil {
					fmt.Fprintln(os.Stderr, "hold:", err)
					os.Exit(2)
				}
				ack(ackHold, id, amount)
				if rng.IntN(8) == 0 {
					continue // left open for recovery
				}
				charge := money.Nano(rng.Int64N(int64(amount) + 1000))
				row := &store.LogRow{AccountID: killAccount, KeyID: killKey, Model: "m", Status: store.StatusSuccess,
					RequestID: id, Cost: charge, CreatedAt: time.Now()}
				if err := s.Settle(ctx, store.Settlement{HoldID: id, Charge: charge, Row: row}); err != nil {
					fmt.Fprintln(os.Stderr, "settle:", err)
					os.Exit(2)
				}
				ack(ackSettle, id, charge)
			}
		}()
	}
	select {} // until killed
}
