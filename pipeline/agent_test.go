package pipeline

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/store"
)

func TestFitPages(t *testing.T) {
	page := func(id string, n int) RetrievedPage {
		return RetrievedPage{ID: id, Title: "T" + id, Body: strings.Repeat("é", n)}
	}
	heading := func(id string) int { return utf8.RuneCountInString(pageHeading(page(id, 0))) }
	total := func(ps []RetrievedPage) int {
		n := 0
		for _, p := range ps {
			n += utf8.RuneCountInString(pageHeading(p)) + utf8.RuneCountInString(p.Body)
		}
		return n
	}
	for _, tc := range []struct {
		desc  string
		in    []RetrievedPage
		ids   string
		chars int
	}{
		{"small pages, the top five", []RetrievedPage{page("1", 10), page("2", 10), page("3", 10), page("4", 10), page("5", 10), page("6", 10)}, "1,2,3,4,5", -1},
		{"the last cut to the budget", []RetrievedPage{page("1", 5000), page("2", 5000), page("3", 10)}, "1,2", retrievalChars},
		{"a heading that does not fit ends it", []RetrievedPage{page("1", retrievalChars-heading("1")-2), page("2", 10)}, "1", -1},
		{"one huge page", []RetrievedPage{page("1", 100000)}, "1", retrievalChars},
		{"none", nil, "", 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := fitPages(tc.in)
			var ids []string
			for _, p := range got {
				ids = append(ids, p.ID)
			}
			if strings.Join(ids, ",") != tc.ids {
				t.Fatalf("pages %v, want %s", ids, tc.ids)
			}
			if n := total(got); n > retrievalChars || tc.chars >= 0 && n != tc.chars {
				t.Fatalf("%d characters, want %d (at most %d)", n, tc.chars, retrievalChars)
			}
		})
	}
}

func TestAgentRequest(t *testing.T) {
	temp := 0.2
	a := &store.Agent{SystemPrompt: "You are Ada.", Model: "m-1", Temperature: &temp}
	body := []byte(`{"messages":[{"role":"system","content":"client rules"},{"role":"user","content":"first"},` +
		`{"role":"assistant","content":"ok"},{"role":"user","content":[{"type":"text","text":"latest"}]}],"stream":true}`)
	msgs := gjson.GetBytes(body, "messages").Array()
	out, err := agentRequest(body, msgs, a, []RetrievedPage{{ID: "p1", Title: "Page", Body: "facts"}}, []string{"web_search"})
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	gjson.GetBytes(out, "messages").ForEach(func(_, m gjson.Result) bool {
		roles = append(roles, m.Get("role").String())
		return true
	})
	if got := strings.Join(roles, ","); got != "system,system,user,assistant,system,user" {
		t.Fatalf("roles %s", got)
	}
	if gjson.GetBytes(out, "messages.0.content").String() != "You are Ada." ||
		!strings.Contains(gjson.GetBytes(out, "messages.4.content").String(), "## Page (p1)\nfacts") {
		t.Fatalf("messages %s", gjson.GetBytes(out, "messages").Raw)
	}
	if gjson.GetBytes(out, "model").String() != "m-1" || gjson.GetBytes(out, "temperature").Float() != 0.2 ||
		gjson.GetBytes(out, "tools").Raw != `[{"type":"web_search"}]` {
		t.Fatalf("body %s", out)
	}
	// The client's temperature wins, 0 included.
	out, err = agentRequest([]byte(`{"messages":[{"role":"user","content":"hi"}],"temperature":0}`),
		gjson.Parse(`[{"role":"user","content":"hi"}]`).Array(), a, nil, nil)
	if err != nil || gjson.GetBytes(out, "temperature").Raw != "0" || gjson.GetBytes(out, "tools").Exists() {
		t.Fatalf("client temperature: %s %v", out, err)
	}
}

func TestStripAgentBody(t *testing.T) {
	out, err := stripAgentBody([]byte(`{"model":"x","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],` +
		`"functions":[{"name":"f"}],"tool_choice":"auto","function_call":"auto","parallel_tool_calls":true,"conversation_id":"c1","max_tokens":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if gjson.GetBytes(out, "model").String() != "agent" {
		t.Fatalf("model: %s", out)
	}
	for _, f := range []string{"tools", "functions", "tool_choice", "function_call", "parallel_tool_calls", "conversation_id"} {
		if gjson.GetBytes(out, f).Exists() {
			t.Fatalf("%s kept: %s", f, out)
		}
	}
	if gjson.GetBytes(out, "max_tokens").Int() != 5 {
		t.Fatalf("max_tokens lost: %s", out)
	}
	for _, bad := range []string{`[]`, `{"messages":"hi"}`, `{"messages":[]}`, `{}`, `not json`, `{"messages":[{"content":"no role"}]}`} {
		if _, err := stripAgentBody([]byte(bad)); err == nil {
			t.Fatalf("%s accepted", bad)
		}
	}
}
