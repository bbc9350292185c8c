package sim

import (
	"math"
	"strings"
	"unicode"

	"github.com/tidwall/gjson"

	"github.com/tollgate-gw/tollgate/core/protocol"
)

// toolText is an offered tool as words, by field, for matching a request.
type toolText struct {
	def     toolDef
	name    map[string]bool // words of the name (Bash; exec_command: exec, command)
	params  map[string]bool // words of the parameter names
	summary map[string]bool // words of the description's first sentence
	rest    map[string]bool // words of the rest of the description and of the parameters' descriptions
	props   []prop          // top-level parameters
}

type prop struct {
	name   string // as written
	key    string // lower case, without _ and -
	schema gjson.Result
	desc   string // lower case
}

// Field weights: a word shared with the tool's name says most about what
// it does; one shared with a long description's detail, least.
const (
	wName    = 3.0
	wParams  = 2.0
	wSummary = 1.5
	wRest    = 0.5
)

func readTool(t toolDef) toolText {
	tt := toolText{def: t, name: setOf(termsOf(splitIdent(t.name))), params: map[string]bool{},
		summary: map[string]bool{}, rest: map[string]bool{}}
	sum, more := firstSentence(t.desc)
	addTerms(tt.summary, sum)
	addTerms(tt.rest, more)
	t.schema.Get("properties").ForEach(func(k, v gjson.Result) bool {
		d := v.Get("description").Str
		tt.props = append(tt.props, prop{name: k.Str, key: propKey(k.Str), schema: v, desc: strings.ToLower(d)})
		addTerms(tt.params, splitIdent(k.Str))
		addTerms(tt.rest, d)
		return true
	})
	return tt
}

// pickByIntent chooses the tool that does what in asks: among the tools
// able to do it (a dedicated tool before a general shell), the one whose
// name, parameters and description share the most with the request.
func pickByIntent(p protocol.ID, c *conv, in *intent) (toolDef, []byte, bool) {
	var tools []toolText
	eachTool(p, c.tools, func(t toolDef) bool {
		if t.name != "" {
			tools = append(tools, readTool(t))
		}
		return true
	})
	if len(tools) == 0 {
		return toolDef{}, nil, false
	}
	best, bestCap, bestScore := -1, 0, 0.0
	for i := range tools {
		capab := tools[i].can(in)
		if capab == 0 {
			continue
		}
		score := lexicalScore(tools, i, in.words)
		if capab > bestCap || capab == bestCap && score > bestScore {
			best, bestCap, bestScore = i, capab, score
		}
	}
	if best >= 0 {
		t := tools[best]
		return t.def, t.args(in), true
	}
	// A request naming what a tool is about ("what's the weather in
	// Paris?" with get_weather) asks for that tool even without an action
	// word of ours.
	if in.textOnly {
		return toolDef{}, nil, false
	}
	return pickByTopic(tools, c.userText)
}

// Capabilities, strongest first: a tool made for the action, one that
// can do it, a shell.
const (
	capShell     = 1
	capAlternate = 2
	capDedicated = 3
)

// can says how well t does what in asks (0: not at all).
func (t *toolText) can(in *intent) int {
	has := func(ws ...string) bool {
		for _, w := range ws {
			if t.name[w] || t.summary[w] {
				return true
			}
		}
		return false
	}
	// A tool for images, notebooks or the web is no file tool for text.
	special := has("image", "images", "notebook", "pdf", "audio", "video", "agent", "agents")
	shell := t.shellProp() != nil
	pathP, contentP := t.pathProp(), t.prop("content", "contents", "text", "filecontent")
	patternP := t.prop("pattern", "glob", "regex", "query", "q")
	dedicated := 0
	switch in.action {
	case actList:
		switch {
		case has("list", "ls") && pathP != nil && !special:
			dedicated = capDedicated
		case has("glob") && patternP != nil:
			dedicated = capAlternate
		}
	case actRead:
		if has("read", "view", "cat", "open") && pathP != nil && t.required(pathP) && !special {
			dedicated = capDedicated
		}
	case actSearch:
		// "Search the wiki for X" asks a knowledge-base tool (an MCP
		// server's search_wiki), not a grep over files.
		wiki := in.asksWiki()
		switch {
		case wiki && has("wiki", "knowledge") && patternP != nil:
			dedicated = capDedicated
		case !wiki && (has("grep") || has("search") && has("file", "files", "content", "contents", "code")) && !has("web") && patternP != nil:
			dedicated = capDedicated
		}
	case actFind:
		if (has("glob") || has("find") && has("file", "files")) && patternP != nil {
			dedicated = capDedicated
		}
	case actWrite:
		switch {
		case has("write", "create") && pathP != nil && contentP != nil:
			dedicated = capDedicated
		case t.patchProp() != nil:
			dedicated = capAlternate
		}
	case actEdit:
		switch {
		case has("edit", "replace") && pathP != nil && t.prop("oldstring", "old", "oldtext") != nil && t.prop("newstring", "new", "newtext") != nil:
			dedicated = capDedicated
		case t.patchProp() != nil:
			dedicated = capAlternate
		}
		return dedicated // no shell edit: quoting sed is a guess
	case actFetch:
		if has("fetch", "url", "browse", "http") && t.prop("url", "uri") != nil {
			dedicated = capDedicated
		}
	case actWebSearch:
		if has("web") && has("search") && patternP != nil {
			dedicated = capDedicated
		}
		return dedicated
	}
	if dedicated > 0 {
		return dedicated
	}
	if shell && in.shellCommand() != "" {
		return capShell
	}
	return 0
}

// lexicalScore is what the request's words share with tools[i], each word
// weighted by how rare it is among the offered tools and by the field it
// matches best.
func lexicalScore(tools []toolText, i int, words []string) float64 {
	t := &tools[i]
	score := 0.0
	seen := map[string]bool{}
	for _, w := range words {
		if stopword(w) || seen[w] {
			continue
		}
		seen[w] = true
		f := 0.0
		switch {
		case t.name[w]:
			f = wName
		case t.params[w]:
			f = wParams
		case t.summary[w]:
			f = wSummary
		case t.rest[w]:
			f = wRest
		}
		if f == 0 {
			continue
		}
		df := 0
		for j := range tools {
			if tools[j].mentions(w) {
				df++
			}
		}
		score += f * math.Log(1+float64(len(tools))/float64(df))
	}
	return score
}

func (t *toolText) mentions(w string) bool {
	return t.name[w] || t.params[w] || t.summary[w] || t.rest[w]
}

// pickByTopic calls a tool whose name carries a content word of the
// request that is no action word of ours ("weather" in get_weather).
func pickByTopic(tools []toolText, text string) (toolDef, []byte, bool) {
	words := termsOf(strings.ToLower(stripMarkers(text)))
	for _, w := range words {
		if len(w) < 4 || stopword(w) || verbs[w] != actNone || genericTopic[w] {
			continue
		}
		for i := range tools {
			// A one-word name is rule 1's, by its exact case.
			if len(tools[i].name) > 1 && tools[i].name[w] {
				g := argGen{root: tools[i].def.schema, text: argText(text)}
				if g.text == "" {
					g.text = topicArg(text, w)
				}
				return tools[i].def, toolArgsWith(make([]byte, 0, 64), tools[i].def, &g), true
			}
		}
	}
	return toolDef{}, nil, false
}

// genericTopic are tool-name words too general to say a request wants
// that tool.
var genericTopic = map[string]bool{
	"tool": true, "tools": true, "file": true, "files": true, "command": true, "data": true, "input": true,
	"output": true, "user": true, "text": true, "task": true, "info": true, "item": true, "items": true,
	"skill": true, "goal": true, "plan": true, "mode": true, "thing": true, "message": true,
}

// topicArg is the request's last content word other than the topic, in
// its own case ("Paris" in "What's the weather in Paris?").
func topicArg(text, topic string) string {
	fields := strings.FieldsFunc(stripMarkers(text), func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.')
	})
	for i := len(fields) - 1; i >= 0; i-- {
		f := strings.Trim(fields[i], ".")
		if l := strings.ToLower(f); l != "" && l != topic && !stopword(l) {
			return f
		}
	}
	return ""
}

// args builds the arguments doing what in asks: the parameters the action
// needs filled from the request, the other required ones by the schema.
func (t *toolText) args(in *intent) []byte {
	g := argGen{root: t.def.schema, fill: func(name string, s gjson.Result) (string, bool) {
		return t.fill(in, name, s)
	}}
	return toolArgsWith(make([]byte, 0, 96), t.def, &g)
}

// fill is the value of one string parameter, by what its name says it is.
func (t *toolText) fill(in *intent, name string, s gjson.Result) (string, bool) {
	key := propKey(name)
	desc := strings.ToLower(s.Get("description").Str)
	absolute := strings.Contains(desc, "absolute")
	switch {
	case isShellKey(key):
		return in.shellCommand(), in.shellCommand() != ""
	case key == "input" && t.patchProp() != nil:
		return in.patch(), in.patch() != ""
	case key == "url" || key == "uri":
		return in.url, in.url != ""
	case key == "oldstring" || key == "old" || key == "oldtext":
		return in.oldText, in.action == actEdit
	case key == "newstring" || key == "new" || key == "newtext":
		return in.newText, in.action == actEdit
	case key == "content" || key == "contents" || key == "text" || key == "filecontent":
		return in.content, in.action == actWrite
	case key == "pattern" || key == "glob" || key == "regex":
		switch in.action {
		case actList:
			return "*", true
		case actFind:
			if !strings.Contains(in.pattern, "/") && !strings.HasPrefix(in.pattern, "**") {
				return "**/" + in.pattern, true
			}
			return in.pattern, true
		case actSearch:
			return in.term, true
		}
	case key == "query" || key == "q" || key == "searchterm":
		return in.term, in.term != ""
	case isPathKey(key):
		p := in.path
		if p == "" {
			if in.action != actList && in.action != actSearch && in.action != actFind {
				return "", false
			}
			p = "."
			if absolute && in.cwd != "" {
				return in.cwd, true
			}
		}
		return in.absPath(p, absolute), true
	}
	return "", false
}

func (t *toolText) prop(keys ...string) *prop {
	for i := range t.props {
		for _, k := range keys {
			if t.props[i].key == k {
				return &t.props[i]
			}
		}
	}
	return nil
}

func (t *toolText) required(p *prop) bool {
	found := false
	t.def.schema.Get("required").ForEach(func(_, v gjson.Result) bool {
		found = v.Str == p.name
		return !found
	})
	return found
}

// shellProp is the parameter taking a shell command: a string, or an
// argv array (Codex's older shell tool).
func (t *toolText) shellProp() *prop {
	for i := range t.props {
		if isShellKey(t.props[i].key) {
			ty := schemaType(t.props[i].schema)
			if ty == "string" || ty == "array" && schemaType(t.props[i].schema.Get("items")) == "string" {
				return &t.props[i]
			}
		}
	}
	return nil
}

// patchProp is the input of an apply_patch style tool.
func (t *toolText) patchProp() *prop {
	if !t.name["patch"] && !t.summary["patch"] {
		return nil
	}
	return t.prop("input", "patch")
}

func (t *toolText) pathProp() *prop {
	for i := range t.props {
		if isPathKey(t.props[i].key) {
			return &t.props[i]
		}
	}
	return nil
}

func isShellKey(k string) bool {
	return k == "command" || k == "cmd" || k == "script" || k == "shellcommand" || k == "commandline"
}

func isPathKey(k string) bool {
	switch k {
	case "path", "filepath", "file", "filename", "absolutepath", "directory", "dir", "dirpath", "target", "targetfile":
		return true
	}
	return false
}

func propKey(name string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(name))
}

// splitIdent spaces an identifier's words: exec_command, ListAgents,
// WebFetch, view-image.
func splitIdent(s string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		switch {
		case r == '_' || r == '-' || r == '.':
			b.WriteByte(' ')
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	return strings.ToLower(b.String())
}

func firstSentence(s string) (string, string) {
	s = strings.TrimSpace(strings.TrimLeft(s, "- "))
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || s[i] == '.' && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n') {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// termsOf splits lower-case text into words, a plural's s removed.
func termsOf(s string) []string {
	f := strings.FieldsFunc(s, func(r rune) bool { return !(unicode.IsLetter(r) || unicode.IsDigit(r)) })
	for i, w := range f {
		f[i] = stem(strings.ToLower(w))
	}
	return f
}

func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us"):
		return w[:len(w)-1]
	}
	return w
}

func addTerms(set map[string]bool, s string) {
	for _, w := range termsOf(strings.ToLower(s)) {
		set[w] = true
	}
}

func setOf(ws []string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

var stopwords = setOf(strings.Fields(`a an the of in on at to for from by with and or not no is are was be been
	this that these those it its me my you your we our us i please can could would will should do does did
	what which who whom how where when why there here all any some each every current now just then than
	so if as into onto about up down out over under again also only very tell give show let use using`))

func stopword(w string) bool { return stopwords[w] }
