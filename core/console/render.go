package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"math/big"
	"net/http"
	"path"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-gw/tollgate/core/logsapi"
	"github.com/tollgate-gw/tollgate/core/money"
	"github.com/tollgate-gw/tollgate/store"
)

// shared are the templates every page is parsed with: the layout and the
// small parts pages share.
var shared = []string{"templates/layout.html", "templates/parts.html"}

var funcs = template.FuncMap{
	"money": func(n money.Nano) string { return n.String() },
	"total": func(t money.Total) string { return t.String() },
	"join":  strings.Join,
	"int":   func(n int64) string { return strconv.FormatInt(n, 10) },
	"deref": func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	},
	"derefInt": func(p *int64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatInt(*p, 10)
	},
	"derefCount": func(p *int) string {
		if p == nil {
			return ""
		}
		return strconv.Itoa(*p)
	},
	"has": func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	},
	"statusClass": func(s string) string { return "status-" + s },
	// items is the slice a pointer holds (the API's "asked, maybe empty"
	// lists), nil for none.
	"items": func(p any) any {
		v := reflect.ValueOf(p)
		if v.Kind() != reflect.Pointer || v.IsNil() {
			return nil
		}
		if e := v.Elem(); e.Kind() == reflect.Slice && e.Len() > 0 {
			return e.Interface()
		}
		return nil
	},
	"plural": func(n int64, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	},
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			k, _ := kv[i].(string)
			m[k] = kv[i+1]
		}
		return m
	},
}

// parsePages parses each page's template with the shared ones.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("").Funcs(funcs).ParseFS(templateFiles, shared...)
	if err != nil {
		return nil, err
	}
	files, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, f := range files {
		if f == shared[0] || f == shared[1] {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFiles, f)
		if err != nil {
			return nil, err
		}
		out[strings.TrimSuffix(path.Base(f), ".html")] = t
	}
	return out, nil
}

// view is what a page's template gets: the visit, the page's own data and
// the helpers templates call.
type view struct {
	*visit
	c *Console
	// Section is the nav entry of the page; Title its title.
	Section, Title string
	Data           any
	// Back is where forms of the page come back to.
	Back string
	// Notice and Problem are a message above the page: done, or refused.
	Notice, Problem string
}

// Asset is an embedded asset's path, versioned for caching.
func (v view) Asset(name string) string {
	return Prefix + "assets/" + name + "?v=" + v.c.assetVersion
}

// Signup is the sign-up mode (the sign-in page links to sign-up when open).
func (v view) Signup() string { return v.c.o.Users.Signup() }

// Nav is the navigation the visitor may use.
func (v view) Nav() []navItem {
	if !v.signedIn() {
		return nil
	}
	items := []navItem{{"overview", "Overview", Prefix}, {"keys", "Keys", Prefix + "keys"}, {"logs", "Logs", Prefix + "logs"},
		{"agents", "Agents", Prefix + "agents"}}
	if v.owner() {
		items = append(items, navItem{"members", "Members", Prefix + "members"}, navItem{"billing", "Billing", Prefix + "billing"})
	}
	return append(items, navItem{"account", "Account", Prefix + "account"})
}

type navItem struct{ ID, Label, Href string }

// When renders an instant in the person's zone, with its UTC value on
// hover and in the datetime attribute.
func (v view) When(t time.Time) template.HTML {
	if t.IsZero() {
		return "—"
	}
	loc := v.Zone
	if loc == nil {
		loc = time.UTC
	}
	local := t.In(loc)
	utc := t.UTC()
	return template.HTML(fmt.Sprintf(`<time datetime="%s" title="%s">%s</time>`,
		utc.Format(time.RFC3339Nano), utc.Format("2006-01-02 15:04:05 UTC"),
		template.HTMLEscapeString(local.Format("2006-01-02 15:04:05 MST"))))
}

// WhenP is When of an optional instant.
func (v view) WhenP(t *time.Time) template.HTML {
	if t == nil {
		return "—"
	}
	return v.When(*t)
}

// WhenS is When of an RFC 3339 string (the logs API's form).
func (v view) WhenS(s string) template.HTML {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return template.HTML(template.HTMLEscapeString(s))
	}
	return v.When(t)
}

// WhenSP is WhenS of an optional string.
func (v view) WhenSP(s *string) template.HTML {
	if s == nil {
		return "—"
	}
	return v.WhenS(*s)
}

// ZoneName is the zone times are shown in.
func (v view) ZoneName() string {
	if v.Zone == nil {
		return "UTC"
	}
	return v.Zone.String()
}

// BaseURL is the API's address for examples.
func (v view) BaseURL() string { return v.Base }

// Role names the visitor's role.
func (v view) Role() string { return v.User.Role }

// Owner, OrgAdmin: what the visitor may do.
func (v view) Owner() bool    { return v.owner() }
func (v view) OrgAdmin() bool { return v.orgAdmin() }
func (v view) SignedIn() bool { return v.signedIn() }

// render writes the page, or only its fragment for an htmx request that
// asks for one (fragment "" renders the whole page either way).
func (c *Console) render(w http.ResponseWriter, v *visit, status int, page, fragment string, vw view) error {
	t, ok := c.pages[page]
	if !ok {
		return fmt.Errorf("console: no template %q", page)
	}
	vw.visit, vw.c = v, c
	name := "layout"
	if fragment != "" && v != nil && v.Partial {
		name = fragment
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, vw); err != nil {
		return fmt.Errorf("console: page %s: %w", page, err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Vary", "HX-Request, Cookie")
	w.WriteHeader(status)
	_, err := w.Write(buf.Bytes())
	return err
}

// errorPage renders a message with its status.
func (c *Console) errorPage(w http.ResponseWriter, r *http.Request, v *visit, status int, msg string) {
	if v == nil {
		v = &visit{Zone: time.UTC}
	}
	if v.Partial {
		// htmx swaps nothing on an error status; the message goes where
		// the page shows problems.
		w.Header().Set("HX-Retarget", "#problem")
		w.Header().Set("HX-Reswap", "innerHTML")
	}
	vw := view{Title: http.StatusText(status), Problem: msg}
	if err := c.render(w, v, status, "error", "problem", vw); err != nil {
		c.log.Error("rendering an error page", "error", err)
		http.Error(w, msg, status)
	}
}

// rowsPart is what the rows template takes.
type rowsPart struct {
	Rows []logsapi.Row
	V    view
	Back string
}

// RowsOf is the rows template's data; back is where a row's page links
// back to.
func (v view) RowsOf(rows []logsapi.Row, back string) rowsPart {
	return rowsPart{Rows: rows, V: v, Back: back}
}

// keyRowPart is what the key-row template takes.
type keyRowPart struct {
	Row  keyRow
	V    view
	Back string
}

// KeyRowOf is the key-row template's data.
func (v view) KeyRowOf(r keyRow) keyRowPart { return keyRowPart{Row: r, V: v, Back: v.Back} }

// Secret is the copy template's data: a value shown once, with its button.
func (v view) Secret(id, raw string) map[string]string {
	return map[string]string{"ID": id, "Raw": raw}
}

// agentFormPart is what the agent-fields template takes.
type agentFormPart struct {
	Form   agentForm
	Models []string
	Bases  []store.KnowledgeBase
}

// AgentFormOf is the agent-fields template's data.
func (v view) AgentFormOf(f agentForm, models []string, bases []store.KnowledgeBase) agentFormPart {
	return agentFormPart{Form: f, Models: models, Bases: bases}
}

// ExampleModel is the model of the examples: the first chat model.
func (v view) ExampleModel() string {
	for _, m := range v.c.o.Config.Models {
		if m.Family == "" || m.Family == "chat" {
			return m.ID
		}
	}
	return "MODEL"
}

// Share is part as a percentage of whole, to one decimal.
func (v view) Share(part, whole money.Total) string {
	p, ok1 := new(big.Rat).SetString(part.String())
	w, ok2 := new(big.Rat).SetString(whole.String())
	if !ok1 || !ok2 || w.Sign() == 0 {
		return "0"
	}
	return new(big.Rat).Mul(new(big.Rat).Quo(p, w), big.NewRat(100, 1)).FloatString(1)
}

// keyKindName is how a key kind reads in a table.
func keyKindName(k string) string {
	switch k {
	case store.KindEmployee:
		return "employee"
	case store.KindDesktop:
		return "desktop"
	case store.KindAgent:
		return "agent"
	}
	return "console"
}
