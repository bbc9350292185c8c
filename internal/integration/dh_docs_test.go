package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/testgw"
)

// docs/digital-human.md's walkthrough runs as printed against `make run`'s
// embedded default: the editing flow from template to composed video, a
// preset avatar speaking, and (after a top-up, as the doc says) an avatar
// registered, ready and speaking. Each block is run by bash, with curl.
func TestDocsWalkthroughOfDigitalHuman(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed to run the documented lines")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "digital-human.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Walk it through on `make run`")
	section, _, _ = strings.Cut(section, "\n## ")
	var blocks []string
	for rest := section; ok; {
		var block string
		if _, rest, ok = strings.Cut(rest, "```sh\n"); !ok {
			break
		}
		block, rest, ok = strings.Cut(rest, "```")
		blocks = append(blocks, block)
	}
	if len(blocks) != 3 {
		t.Fatalf("want the walkthrough's three sh blocks, found %d", len(blocks))
	}
	g := testgw.Start(t, testgw.Options{})
	out := g.Output()
	i := strings.Index(out, "sk-tollgate-")
	if i < 0 {
		t.Fatalf("no demo key in the banner:\n%s", out)
	}
	key := out[i : i+76]
	host := strings.TrimPrefix(g.URL, "http://")
	run := func(block string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", strings.ReplaceAll(block, "localhost:8080", host))
		cmd.Env = append(os.Environ(), "K="+key)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the documented block failed: %v\n%s\n--- block:\n%s", err, b, block)
		}
		return string(b)
	}
	if got := run(blocks[0]); !strings.Contains(got, `"style_id":"talk-01"`) || !strings.Contains(got, "asr_id sub_") ||
		!strings.Contains(got, `"model":"clip-compose"`) {
		t.Fatalf("the editing flow printed:\n%s", got)
	}
	if got := run(blocks[1]); !strings.Contains(got, `"avatars":[`) || !strings.Contains(got, `"model":"dh-avatar"`) {
		t.Fatalf("the preset avatar printed:\n%s", got)
	}
	var accts struct{ Data []struct{ ID string } }
	g.Admin("GET", "/accounts", nil, &accts)
	if len(accts.Data) != 1 {
		t.Fatalf("accounts %+v", accts)
	}
	g.Admin("POST", "/accounts/"+accts.Data[0].ID+"/credits", map[string]any{"amount": "300", "note": "demo"}, nil)
	if got := run(blocks[2]); !strings.Contains(got, `"status":"ready"`) || !strings.Contains(got, `"object":"list"`) {
		t.Fatalf("the registered avatar printed:\n%s", got)
	}
	// Every step is a row at the embedded default's prices.
	var rows []string
	for _, r := range logsOf(t, g, key) {
		if r["status"] != "success" {
			t.Fatalf("row %v", r)
		}
		rows = append(rows, str(r["model"])+" "+str(r["cost"]))
	}
	// Newest first: the registered avatar speaks 4 s at 3.96, the preset
	// 5 s (its script's 8 s capped at the 5 held).
	if want := "dh-avatar 15.84,dh-avatar-create 220.11,dh-avatar 19.8,clip-compose 90,clip-subtitle 0"; strings.Join(rows, ",") != want {
		t.Fatalf("rows %v, want %s", rows, want)
	}
}
