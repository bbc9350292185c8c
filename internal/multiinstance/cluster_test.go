// Package multiinstance runs several real gateway binaries on one
// PostgreSQL database (started by the test, internal/testpg) behind a
// loopback round-robin load spreader, and checks that money, limits,
// idempotency, key revocation and crash recovery hold across instances.
package multiinstance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/internal/testgw"
	"github.com/tollgate-gw/tollgate/internal/testpg"
)

func TestMain(m *testing.M) { os.Exit(testpg.Main(m)) }

// masterKey is shared by every instance, as a postgres store requires.
const masterKey = "5ea1ed0fc0ffee5ea1ed0fc0ffee5ea1ed0fc0ffee5ea1ed0fc0ffee5ea1ed0f"

// clusterConfig serves sim's chat and images with exact prices; the lease
// is short so that crash recovery is quick to watch.
const clusterConfig = `
server {
  allow_private_urls = true
}
store "postgres" {
  url   = env("DATABASE_URL")
  lease = "%s"
}
channel "sim" {
  vendor    = "sim"
  base_url  = "sim://local"
  families  = ["chat", "image"]
  protocols = ["openai_chat"]
  models    = ["mi-chat", "mi-image"]
}
model "mi-chat" {
  owned_by = "sim"
  price {
    input  = "1"
    output = "2"
  }
}
model "mi-image" {
  owned_by = "sim"
  family   = "image"
  price {
    per_image = "0.04"
  }
}
console {}
accounts {
  signup = true
}
`

// cluster is n gateways on one database and the spreader in front.
type cluster struct {
	t     *testing.T
	dbURL string
	lease string
	gws   []*testgw.Gateway
	url   string // the spreader
	next  atomic.Uint64
	mu    sync.Mutex
}

// startCluster starts n instances at once on a new, empty database, so
// they race to migrate it.
func startCluster(t *testing.T, n int, lease string) *cluster {
	t.Helper()
	return startClusterOn(t, n, lease, testpg.Database(t))
}

// startClusterOn starts n instances on the database at dbURL.
func startClusterOn(t *testing.T, n int, lease, dbURL string) *cluster {
	t.Helper()
	c := &cluster{t: t, dbURL: dbURL, lease: lease}
	c.gws = make([]*testgw.Gateway, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.gws[i] = c.startOne()
		}()
	}
	wg.Wait()
	for _, g := range c.gws {
		if g == nil {
			t.FailNow()
		}
	}
	spreader := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			c.mu.Lock()
			g := c.gws[c.next.Add(1)%uint64(len(c.gws))]
			c.mu.Unlock()
			u, _ := url.Parse(g.URL)
			r.SetURL(u)
		},
		FlushInterval: -1,
		Transport:     &http.Transport{MaxIdleConnsPerHost: 256},
	})
	t.Cleanup(spreader.Close)
	c.url = spreader.URL
	return c
}

func (c *cluster) startOne() *testgw.Gateway {
	return testgw.Start(c.t, testgw.Options{
		Config: fmt.Sprintf(clusterConfig, c.lease),
		Env:    []string{"DATABASE_URL=" + c.dbURL, "TOLLGATE_MASTER_KEY=" + masterKey},
	})
}

// live are the instances still running; the spreader skips dead ones.
func (c *cluster) replace(i int, g *testgw.Gateway) {
	c.mu.Lock()
	c.gws[i] = g
	c.mu.Unlock()
}

// answer is one HTTP exchange.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
	Err    error
}

func (a answer) code() string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(a.Body, &e)
	return e.Error.Code
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 2 * time.Minute}

func send(method, url, key, body string, header map[string]string) answer {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return answer{Err: err}
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{Status: resp.StatusCode, Header: resp.Header, Body: b, Err: err}
}

func chat(prompt string, maxTokens int) string {
	p, _ := json.Marshal(prompt)
	return fmt.Sprintf(`{"model":"mi-chat","max_tokens":%d,"messages":[{"role":"user","content":%s}]}`, maxTokens, p)
}

// account opens an account with credit and a key that reads its logs.
func (c *cluster) account(credit string) (acct, key string) {
	g := c.gws[0]
	acct = g.Account(credit)
	_, key = g.Key(acct, map[string]any{"logs_account_scope": true})
	return acct, key
}

// row is what the audit reads of a log row.
type row struct {
	ID        uint64 `json:"id"`
	Status    string `json:"status"`
	Cost      string `json:"cost"`
	RequestID string `json:"request_id"`
	TaskID    string `json:"task_id"`
	ErrorCode string `json:"error_code"`
	CreatedAt string `json:"created_at"`
}

// rows lists the account's rows through the logs API (one page of 200).
func rows(t *testing.T, base, key string) []row {
	t.Helper()
	a := send("GET", base+"/v1/logs?period=all&limit=200&scope=account", key, "", nil)
	if a.Err != nil || a.Status != 200 {
		t.Fatalf("logs: %d %v %s", a.Status, a.Err, a.Body)
	}
	var out struct {
		Data    []row `json:"data"`
		HasMore bool  `json:"has_more"`
	}
	if err := json.Unmarshal(a.Body, &out); err != nil {
		t.Fatal(err)
	}
	if out.HasMore {
		t.Fatal("more than 200 rows: the audit reads one page")
	}
	return out.Data
}

// audit checks the books of an account to the nano (checkBooks: nothing
// held, one row per request id, balance plus the rows' costs equal to
// what was credited), and that the summary agrees with the rows; then the
// gateway's own audit of the whole database's books (every instance's).
func audit(t *testing.T, g *testgw.Gateway, acct, key string, credited money.Nano) []row {
	t.Helper()
	g.CheckBooks()
	var rs []row
	var charged money.Nano
	for _, byID := range checkBooks(t, g, acct, key, credited) {
		for _, r := range byID {
			if c := money.MustParse(r.Cost); c < 0 {
				t.Fatalf("row %d has a negative cost %s", r.ID, r.Cost)
			} else {
				charged += c
			}
			rs = append(rs, r)
		}
	}
	// The summary (added up by the database) agrees with the rows.
	a := send("GET", g.URL+"/v1/logs/summary?period=7d&scope=account", key, "", nil)
	var sum struct {
		Total struct {
			Requests int    `json:"requests"`
			Cost     string `json:"cost"`
		} `json:"total"`
	}
	if a.Status != 200 || json.Unmarshal(a.Body, &sum) != nil {
		t.Fatalf("summary: %d %s", a.Status, a.Body)
	}
	if sum.Total.Requests != len(rs) || money.MustParse(sum.Total.Cost) != charged {
		t.Fatalf("summary %+v, the rows: %d costing %s", sum.Total, len(rs), charged)
	}
	return rs
}

// TestSharedState runs three instances on one database and checks, each
// against the three together: money, limits, idempotency, revocation.
func TestSharedState(t *testing.T) {
	c := startCluster(t, 3, "3s")
	t.Run("wallet worth N calls serves N of 4N", c.testWallet)
	t.Run("rpm and concurrency hold in total", c.testLimits)
	t.Run("one idempotency key executes once", c.testIdempotency)
	t.Run("revoked key refused everywhere within a second", c.testRevocation)
	t.Run("knowledge base follows another instance's writes", c.testKnowledgeBase)
	t.Run("agents: a spend cap and unpublishing hold across instances", c.testAgents)
	t.Run("console: a session and the sign-in throttle hold across instances", c.testConsole)
	t.Run("SIGKILL with calls and tasks in flight", c.testKill)
}

// A wallet worth exactly N calls: N of 4N concurrent calls are served and
// the others refused with 402; the balance ends at exactly 0, never below.
// Each hold equals its call's cost (sim settles at the input estimate and
// emits exactly max_tokens words), and the calls take a second, so every
// one arrives while the first N still hold their money.
func (c *cluster) testWallet(t *testing.T) {
	const n, words = 10, 40
	body := chat(fmt.Sprintf("exactly [sim:latency=1s,words=%d]", words), words)

	// One call on another account gives the cost of each.
	pacct, pkey := c.account("10")
	if a := send("POST", c.url+"/v1/chat/completions", pkey, body, nil); a.Status != 200 {
		t.Fatalf("probe: %d %v %s", a.Status, a.Err, a.Body)
	}
	pr := rows(t, c.url, pkey)
	cost := money.MustParse(pr[0].Cost)
	if cost <= 0 {
		t.Fatalf("probe cost %s", pr[0].Cost)
	}
	audit(t, c.gws[1], pacct, pkey, money.MustParse("10"))

	credit := cost * n
	acct, key := c.account(credit.String())
	answers := make([]answer, 4*n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = send("POST", c.url+"/v1/chat/completions", key, body, nil)
		}()
	}
	close(start)
	wg.Wait()
	served, refused := 0, 0
	for _, a := range answers {
		switch {
		case a.Err != nil:
			t.Fatalf("call: %v", a.Err)
		case a.Status == 200:
			served++
		case a.Status == 402 && a.code() == "quota_exceeded":
			refused++
		default:
			t.Fatalf("call: %d %s", a.Status, a.Body)
		}
	}
	if served != n || refused != 3*n {
		t.Fatalf("served %d and refused %d of %d, want %d and %d", served, refused, 4*n, n, 3*n)
	}
	if bal, _ := c.gws[2].Balance(acct); bal != "0" {
		t.Fatalf("balance %s, want exactly 0", bal)
	}
	rs := audit(t, c.gws[0], acct, key, credit)
	ok := 0
	for _, r := range rs {
		if r.Status == "success" {
			ok++
		}
	}
	if ok != n {
		t.Fatalf("%d success rows, want %d", ok, n)
	}
}

// An account with rpm 60 and concurrency 5 gets 60 requests a minute and
// 5 at once in total, whichever instances its calls reach.
func (c *cluster) testLimits(t *testing.T) {
	t.Run("requests per minute", func(t *testing.T) {
		acct, key := c.account("100")
		c.gws[0].Admin("PATCH", "/accounts/"+acct, map[string]any{"rpm": 60}, nil)
		const total, workers = 100, 4
		var next atomic.Int64
		var mu sync.Mutex
		counts := map[int]int{}
		var refusal answer
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= total {
					a := send("POST", c.url+"/v1/chat/completions", key, chat("quick [sim:words=2]", 2), nil)
					mu.Lock()
					counts[a.Status]++
					if a.Status == 429 {
						refusal = a
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if counts[200] != 60 || counts[429] != 40 {
			t.Fatalf("answers %v, want 60 served and 40 refused", counts)
		}
		checkRefusal(t, refusal, "60", "requests per minute")
		audit(t, c.gws[1], acct, key, money.MustParse("100"))
	})
	t.Run("concurrency", func(t *testing.T) {
		acct, key := c.account("100")
		c.gws[0].Admin("PATCH", "/accounts/"+acct, map[string]any{"concurrency": 5}, nil)
		answers := make([]answer, 15)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				answers[i] = send("POST", c.url+"/v1/chat/completions", key, chat("slow [sim:latency=2s,words=2]", 2), nil)
			}()
		}
		close(start)
		wg.Wait()
		counts := map[int]int{}
		var refusal answer
		for _, a := range answers {
			counts[a.Status]++
			if a.Status == 429 {
				refusal = a
			}
		}
		if counts[200] != 5 || counts[429] != 10 {
			t.Fatalf("answers %v, want 5 served and 10 refused", counts)
		}
		checkRefusal(t, refusal, "5", "concurrency")
		// The slots were given back: five more fit at once.
		for i := range 5 {
			if a := send("POST", c.gws[i%3].URL+"/v1/chat/completions", key, chat("after [sim:words=2]", 2), nil); a.Status != 200 {
				t.Fatalf("after the burst: %d %s", a.Status, a.Body)
			}
		}
		audit(t, c.gws[2], acct, key, money.MustParse("100"))
	})
}

// checkRefusal checks an account-limit 429: the dimension in the message
// and the spec's headers.
func checkRefusal(t *testing.T, a answer, limit, dimension string) {
	t.Helper()
	if !bytes.Contains(a.Body, []byte(dimension)) || a.code() != "rate_limit_exceeded" {
		t.Fatalf("refusal %d %s does not name %s", a.Status, a.Body, dimension)
	}
	h := a.Header
	if h.Get("x-ratelimit-limit") != limit || h.Get("x-ratelimit-remaining") != "0" ||
		h.Get("Retry-After") == "" || h.Get("x-ratelimit-reset") != h.Get("Retry-After") {
		t.Fatalf("refusal headers %v", h)
	}
}

// One Idempotency-Key sent to two instances at once runs once: the other
// call is told it is in flight (or, if it comes late, gets the replay).
func (c *cluster) testIdempotency(t *testing.T) {
	acct, key := c.account("10")
	body := chat("only once [sim:latency=1s,words=3]", 3)
	hdr := map[string]string{"Idempotency-Key": "same-key-1"}
	answers := make([]answer, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = send("POST", c.gws[i].URL+"/v1/chat/completions", key, body, hdr)
		}()
	}
	close(start)
	wg.Wait()
	ran := 0
	for _, a := range answers {
		switch {
		case a.Status == 200 && a.Header.Get("Idempotency-Replayed") == "":
			ran++
		case a.Status == 200, a.Status == 409 && a.code() == "idempotency_in_flight":
		default:
			t.Fatalf("answer %d %v %s", a.Status, a.Err, a.Body)
		}
	}
	if ran != 1 {
		t.Fatalf("%d calls ran, want 1: %d and %d", ran, answers[0].Status, answers[1].Status)
	}
	// Replayed by the third instance, not run again.
	if a := send("POST", c.gws[2].URL+"/v1/chat/completions", key, body, hdr); a.Status != 200 || a.Header.Get("Idempotency-Replayed") != "true" {
		t.Fatalf("replay: %d %v %s", a.Status, a.Header, a.Body)
	}
	charged := 0
	for _, r := range audit(t, c.gws[1], acct, key, money.MustParse("10")) {
		if r.Status == "success" && money.MustParse(r.Cost) > 0 {
			charged++
		}
	}
	if charged != 1 {
		t.Fatalf("%d charged rows, want 1", charged)
	}
}

// A key revoked through one instance is refused by another within a
// second, though the other had it in its cache; so is a deleted one.
func (c *cluster) testRevocation(t *testing.T) {
	acct, _ := c.account("10")
	for _, how := range []string{"disable", "delete"} {
		t.Run(how, func(t *testing.T) {
			id, key := c.gws[0].Key(acct, nil)
			other := c.gws[2]
			for range 3 { // warm the other instance's cache
				if a := send("GET", other.URL+"/v1/models", key, "", nil); a.Status != 200 {
					t.Fatalf("before: %d %s", a.Status, a.Body)
				}
			}
			if how == "disable" {
				c.gws[0].Admin("PATCH", "/keys/"+id, map[string]any{"enabled": false}, nil)
			} else {
				c.gws[0].Admin("DELETE", "/keys/"+id, nil, nil)
			}
			done := time.Now()
			first := time.Duration(-1)
			for time.Since(done) < 1500*time.Millisecond {
				began := time.Since(done)
				a := send("GET", other.URL+"/v1/models", key, "", nil)
				if a.Status == 401 && first < 0 {
					first = began
				}
				// Whatever the machine's load, a call made a second after
				// the revocation is refused.
				if began >= time.Second && a.Status != 401 {
					t.Fatalf("a call %s after the revocation got %d", began, a.Status)
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("%s: the other instance refused the key %s after the revocation", how, first)
		})
	}
}

// An instance killed with SIGKILL while chat calls and async image tasks
// are in flight loses nothing: the survivors leave its holds alone while
// its lease runs, then release each exactly once (a row of status
// interrupted, no charge); its tasks are claimed and refunded; a new
// instance starting meanwhile settles none of the survivors' live calls,
// which finish and are charged.
func (c *cluster) testKill(t *testing.T) {
	acct, key := c.account("100")
	credited := money.MustParse("100")
	victim, survivor := c.gws[0], c.gws[1]
	// Bodies of one length, so one hold each: the durations read alike.
	body := func(latency string) string { return chat("in flight [sim:latency="+latency+",words=5]", 5) }
	if a := send("POST", survivor.URL+"/v1/chat/completions", key, body("00s"), nil); a.Status != 200 {
		t.Fatalf("probe: %d %s", a.Status, a.Body)
	}
	hold := money.MustParse(rows(t, survivor.URL, key)[0].Cost)
	for range 4 {
		if a := send("POST", c.url+"/v1/chat/completions", key, chat("before [sim:words=3]", 3), nil); a.Status != 200 {
			t.Fatalf("before the kill: %d %s", a.Status, a.Body)
		}
	}

	const onVictim, onSurvivor, tasks = 6, 3, 4
	var wg sync.WaitGroup
	for range onVictim {
		wg.Add(1)
		go func() { defer wg.Done(); send("POST", victim.URL+"/v1/chat/completions", key, body("30s"), nil) }()
	}
	survived := make([]answer, onSurvivor)
	for i := range survived {
		wg.Add(1)
		go func() {
			defer wg.Done()
			survived[i] = send("POST", survivor.URL+"/v1/chat/completions", key, body("08s"), nil)
		}()
	}
	var taskIDs []string
	for i := range tasks {
		a := send("POST", victim.URL+"/v1/images/generations", key,
			fmt.Sprintf(`{"model":"mi-image","prompt":"long %d [sim:latency=60s]","n":2,"async":true}`, i), nil)
		var task struct{ ID string }
		if a.Status != 202 || json.Unmarshal(a.Body, &task) != nil {
			t.Fatalf("submit: %d %s", a.Status, a.Body)
		}
		taskIDs = append(taskIDs, task.ID)
	}
	want := (onVictim+onSurvivor)*hold + tasks*money.MustParse("0.08")
	heldNow := func() money.Nano { _, h := survivor.Balance(acct); return money.MustParse(h) }
	for deadline := time.Now().Add(10 * time.Second); heldNow() != want; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("held %s, want %s with every call in flight", heldNow(), want)
		}
	}

	victim.Kill()
	killed := time.Now()
	// The victim's lease (3 s, renewed every second) runs at least 2 s
	// more: its holds stay, and so do the survivor's.
	for _, at := range []time.Duration{0, 500 * time.Millisecond} {
		time.Sleep(time.Until(killed.Add(at)))
		if h := heldNow(); h != want && time.Since(killed) < 2*time.Second {
			t.Fatalf("%s after the kill: held %s, want %s (a live lease's holds were released)", at, h, want)
		}
	}
	// A new instance starts while the survivor's calls run.
	c.replace(0, c.startOne())

	for deadline := time.Now().Add(45 * time.Second); heldNow() != 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("held %s 45 s after the kill, want 0", heldNow())
		}
	}
	released := time.Since(killed)
	wg.Wait()
	for _, a := range survived {
		if a.Status != 200 {
			t.Fatalf("a survivor's call: %d %v %s", a.Status, a.Err, a.Body)
		}
	}
	rs := audit(t, survivor, acct, key, credited)
	byRef := map[string]int{}
	interrupted, succeeded := 0, 0
	for _, r := range rs {
		byRef[r.RequestID]++
		switch r.Status {
		case "interrupted":
			interrupted++
			if money.MustParse(r.Cost) != 0 {
				t.Fatalf("an interrupted row was charged: %+v", r)
			}
			// Released once the lease ended: at least a second after the
			// kill (the lease is 3 s, renewed every second).
			if at, err := time.Parse(time.RFC3339Nano, r.CreatedAt); err != nil || at.Before(killed.Add(time.Second)) {
				t.Fatalf("row %+v written %s after the kill, before the victim's lease ended", r, at.Sub(killed))
			}
		case "success":
			succeeded++
		}
	}
	for ref, n := range byRef {
		if n != 1 {
			t.Fatalf("request %s has %d rows, want 1 (released exactly once)", ref, n)
		}
	}
	if interrupted != onVictim+tasks || succeeded != 1+4+onSurvivor {
		t.Fatalf("%d interrupted and %d succeeded rows, want %d and %d", interrupted, succeeded, onVictim+tasks, 1+4+onSurvivor)
	}
	for _, id := range taskIDs {
		a := send("GET", c.url+"/v1/images/generations/"+id, key, "", nil)
		if a.Status != 500 || a.code() != "internal_error" {
			t.Fatalf("task %s after the kill: %d %s", id, a.Status, a.Body)
		}
	}
	// A later sweep finds nothing more to release.
	bal, _ := survivor.Balance(acct)
	time.Sleep(2 * time.Second)
	if again, held := c.gws[2].Balance(acct); again != bal || held != "0" {
		t.Fatalf("balance %s held %s after another sweep, was %s", again, held, bal)
	}
	t.Logf("every hold of the killed instance released %s after the kill", released.Round(time.Millisecond))
}

// A knowledge base written through one instance is searched through
// another: its index follows the store's change log within a bounded lag,
// and who may read is checked against the store on every query.
func (c *cluster) testKnowledgeBase(t *testing.T) {
	acct, key := c.account("1")
	other, _ := c.account("1")
	writer, reader := c.gws[0], c.gws[1]
	writer.Admin("PUT", "/kbs/shared", map[string]any{"name": "Shared", "readers": []string{acct}}, nil)
	writer.Admin("POST", "/kbs/shared/pages", map[string]any{"pages": []map[string]any{
		{"id": "tollbooth", "title": "Toll booths", "body": "A zeppelinous toll booth takes credits."},
	}}, nil)
	written := time.Now()
	search := func() answer {
		return send("GET", reader.URL+"/api/v1/ext/wiki/search?kb_id=shared&q=zeppelinous", key, "", nil)
	}
	for {
		a := search()
		if a.Status == 200 && bytes.Contains(a.Body, []byte(`"tollbooth"`)) {
			t.Logf("the other instance found the page %s after the write", time.Since(written).Round(time.Millisecond))
			break
		}
		if time.Since(written) > 5*time.Second {
			t.Fatalf("the other instance did not find the page within 5 s: %d %s", a.Status, a.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Readers are read from the store at query time: no lag.
	writer.Admin("PUT", "/kbs/shared", map[string]any{"readers": []string{other}}, nil)
	if a := search(); a.Status != 404 {
		t.Fatalf("a reader removed on one instance still reads through another: %d %s", a.Status, a.Body)
	}
	writer.Admin("PUT", "/kbs/shared", map[string]any{"readers": []string{acct}}, nil)
	writer.Admin("DELETE", "/kbs/shared/pages/tollbooth", nil, nil)
	if a := send("GET", reader.URL+"/api/v1/ext/wiki/pages/tollbooth?kb_id=shared", key, "", nil); a.Status != 404 {
		t.Fatalf("a deleted page still reads through another instance: %d %s", a.Status, a.Body)
	}
	for deleted := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if a := search(); a.Status == 200 && !bytes.Contains(a.Body, []byte(`"tollbooth"`)) {
			break
		}
		if time.Since(deleted) > 5*time.Second {
			t.Fatal("a deleted page is still found by another instance's search 5 s later")
		}
	}
}

// An agent key's spend cap worth exactly N calls serves N of 4N concurrent
// calls spread over the instances, and an agent unpublished through one
// instance is refused by another within a second (it had the agent
// cached).
func (c *cluster) testAgents(t *testing.T) {
	const n, words = 4, 30
	acct, console := c.account("100")
	g := c.gws[0]
	var ag struct{ ID string }
	g.Admin("POST", "/accounts/"+acct+"/agents", map[string]any{"name": "helper", "system_prompt": "Be brief.", "model": "mi-chat"}, &ag)
	agentKey := func(cap any) string {
		var k struct{ Key string }
		g.Admin("POST", "/agents/"+ag.ID+"/keys", map[string]any{"name": "k", "spend_cap": cap}, &k)
		return k.Key
	}
	body := chat(fmt.Sprintf("capped [sim:latency=1s,words=%d]", words), words)
	probe := agentKey(nil)
	if a := send("POST", c.gws[1].URL+"/v1/chat/completions", probe, body, nil); a.Status != 200 {
		t.Fatalf("probe: %d %s", a.Status, a.Body)
	}
	cost := money.MustParse(rows(t, c.url, console)[0].Cost)

	capped := agentKey((cost * n).String())
	answers := make([]answer, 4*n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = send("POST", c.url+"/v1/chat/completions", capped, body, nil)
		}()
	}
	close(start)
	wg.Wait()
	served := 0
	for _, a := range answers {
		switch {
		case a.Status == 200:
			served++
		case a.Status == 402 && bytes.Contains(a.Body, []byte("spend cap")):
		default:
			t.Fatalf("capped call: %d %v %s", a.Status, a.Err, a.Body)
		}
	}
	if served != n {
		t.Fatalf("a cap of %d calls served %d of %d", n, served, 4*n)
	}
	audit(t, c.gws[2], acct, console, money.MustParse("100"))

	// Unpublished through one instance, refused by another within a second.
	other := c.gws[2]
	quick := chat("quick [sim:words=2]", 2)
	if a := send("POST", other.URL+"/v1/chat/completions", probe, quick, nil); a.Status != 200 {
		t.Fatalf("before: %d %s", a.Status, a.Body)
	}
	g.Admin("PATCH", "/agents/"+ag.ID, map[string]any{"published": false}, nil)
	done := time.Now()
	time.Sleep(time.Second)
	if a := send("POST", other.URL+"/v1/chat/completions", probe, quick, nil); a.Status != 403 || !bytes.Contains(a.Body, []byte("not published")) {
		t.Fatalf("a call %s after unpublishing: %d %s", time.Since(done).Round(time.Millisecond), a.Status, a.Body)
	}
}

// A console session made on one instance signs in on every other (its
// forms' CSRF tokens too, from the shared master key); signing out on a
// third ends it everywhere; wrong passwords spread over the instances
// are counted together.
func (c *cluster) testConsole(t *testing.T) {
	on := func(i int, from *testgw.ConsoleClient) *testgw.ConsoleClient {
		return &testgw.ConsoleClient{Base: c.gws[i].URL, HTTP: from.HTTP}
	}
	a := testgw.NewConsoleClient(c.gws[0].URL)
	if err := a.SignUp("ada@example.com", "a long password", ""); err != nil {
		t.Fatalf("sign up on instance 0: %v", err)
	}
	b := on(1, a)
	if st, body, err := b.Get("/console/keys"); err != nil || st != http.StatusOK || !strings.Contains(body, "ada@example.com") {
		t.Fatalf("the session on instance 1: %d %v", st, err)
	}
	if st, body, _, err := b.Post("/console/keys", url.Values{"name": {"made on 1"}}); err != nil || st != http.StatusCreated {
		t.Fatalf("a form on instance 1: %d %v %s", st, err, body)
	}
	third := on(2, a)
	third.Get("/console/account")
	if st, _, _, err := third.Post("/console/signout", nil); err != nil || st != http.StatusSeeOther {
		t.Fatalf("sign out on instance 2: %d %v", st, err)
	}
	if st, _, err := a.Get("/console/keys"); err != nil || st != http.StatusSeeOther {
		t.Fatalf("the signed-out session on instance 0: %d %v", st, err)
	}

	for i := range 10 {
		p := testgw.NewConsoleClient(c.gws[i%len(c.gws)].URL)
		if err := p.SignIn("ada@example.com", fmt.Sprintf("wrong %d", i)); err == nil {
			t.Fatal("a wrong password signed in")
		}
	}
	for i := range c.gws {
		p := testgw.NewConsoleClient(c.gws[i].URL)
		p.Get("/console/signin")
		st, body, _, err := p.Post("/console/signin", url.Values{"email": {"ada@example.com"}, "password": {"a long password"}})
		if err != nil || st != http.StatusTooManyRequests || !strings.Contains(body, "Too many failed sign-ins") {
			t.Fatalf("instance %d after ten wrong passwords elsewhere: %d %v", i, st, err)
		}
	}
}
