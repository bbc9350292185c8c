package sim

import (
	"path"
	"regexp"
	"strings"
	"unicode"
)

// intent is what a plain-words request asks a tool to do ("list the files
// of the current directory"), read from the last user message the way a
// model would, so an agent offering tools gets a call that does it.
type intent struct {
	action  action
	path    string // a file or directory the request names ("" = none)
	pattern string // a glob the request names ("*.go")
	term    string // what to search for, or a web query
	command string // a shell command the request spells out
	url     string
	content string // what to write
	oldText string // edit: replace oldText with newText
	newText string
	cwd     string // the agent's working directory, from its context
	words   []string
	// textOnly: the request asks for text ("reply ...", "explain ...").
	textOnly bool
}

type action int

const (
	actNone      action = iota
	actList             // list a directory
	actRead             // show a file
	actSearch           // search file contents
	actFind             // find files by name
	actRun              // run a command
	actWrite            // create or overwrite a file
	actEdit             // replace text in a file
	actDelete           // remove a file
	actFetch            // fetch a URL
	actWebSearch        // search the web
	actPwd              // print the working directory
)

// verbs maps the first action word of a request to what it asks; some are
// settled by their object below (show a file reads it, show files lists).
var verbs = map[string]action{
	"list": actList, "ls": actList, "enumerate": actList,
	"read": actRead, "cat": actRead, "open": actRead, "view": actRead, "display": actRead, "print": actRead, "show": actRead,
	"search": actSearch, "grep": actSearch, "look": actSearch,
	"find": actFind, "locate": actFind, "glob": actFind,
	"run": actRun, "execute": actRun, "exec": actRun, "launch": actRun, "invoke": actRun,
	"write": actWrite, "create": actWrite, "make": actWrite, "save": actWrite, "add": actWrite, "touch": actWrite,
	"edit": actEdit, "replace": actEdit, "change": actEdit, "modify": actEdit, "update": actEdit,
	"delete": actDelete, "remove": actDelete, "rm": actDelete,
	"fetch": actFetch, "download": actFetch, "curl": actFetch, "browse": actFetch, "visit": actFetch,
	"google": actWebSearch,
	"pwd":    actPwd,
}

// shellWords start a command a request may spell out without quotes ("run
// git status").
var shellWords = map[string]bool{
	"ls": true, "cat": true, "echo": true, "git": true, "go": true, "make": true, "npm": true, "node": true,
	"python": true, "python3": true, "pip": true, "cargo": true, "pwd": true, "grep": true, "find": true,
	"wc": true, "head": true, "tail": true, "date": true, "whoami": true, "uname": true, "env": true,
	"printf": true, "mkdir": true, "touch": true, "curl": true, "df": true, "du": true, "ps": true,
}

var (
	reQuoted  = regexp.MustCompile("`([^`]+)`|\"([^\"]+)\"|'([^']+)'")
	reURLText = regexp.MustCompile(`https?://[^\s"'<>)\]]+`)
	// A path names a directory or has an extension: ./x, ~/x, /etc/hosts,
	// src/main.go, README.md, .gitignore.
	rePath = regexp.MustCompile(`(?:^|[\s(])((?:~|\.{1,2})?/?(?:[\w.\-]+/)*[\w\-]*\.[A-Za-z0-9]{1,8}|(?:~|\.{1,2})?/(?:[\w.\-]+/?)*|(?:[\w.\-]+/)+[\w.\-]*)`)
	reGlob = regexp.MustCompile(`(?:^|\s)((?:[\w.\-/]*\*[\w.\-/*]*))`)
	// The agent's working directory: Claude Code's "Primary working
	// directory: /x", Codex's <cwd>/x</cwd> (< and > maybe escaped).
	reCwd     = regexp.MustCompile(`(?:[Ww]orking directory|(?:<|\\u003c)cwd(?:>|\\u003e))\s*:?\s*(/[^\s<"\\]*)`)
	reReplace = regexp.MustCompile(`(?i)\breplace\s+["'` + "`" + `]?(.+?)["'` + "`" + `]?\s+with\s+["'` + "`" + `]?(.+?)["'` + "`" + `]?(?:\s+in\s|$)`)
	reContent = regexp.MustCompile(`(?i)\b(?:containing|with the (?:text|content|contents)|that says|saying|with content)\s+(.+)$`)
)

// readIntent reads what the request text asks; body is the whole request,
// searched for the agent's working directory.
func readIntent(text, body string) intent {
	in := intent{}
	text = strings.TrimSpace(stripMarkers(text))
	if m := reCwd.FindStringSubmatch(body); m != nil {
		in.cwd = strings.TrimRight(m[1], "/.,;")
	}
	lower := strings.ToLower(text)
	in.words = termsOf(lower)
	if m := reURLText.FindString(text); m != "" {
		in.url = strings.TrimRight(m, ".,;:")
	}
	rest := reURLText.ReplaceAllString(text, " ")
	var quoted []string
	for _, m := range reQuoted.FindAllStringSubmatch(rest, -1) {
		for _, g := range m[1:] {
			if g != "" {
				quoted = append(quoted, g)
			}
		}
	}
	// The action is the first action word; a request that starts by
	// asking for text ("reply", "explain", "tell") asks for no tool.
	first := ""
	verbAt := -1
	for i, w := range in.words {
		if i == 0 && (w == "reply" || w == "explain" || w == "tell" || w == "describe" || w == "summarize" || w == "answer") {
			in.textOnly = true
			return in
		}
		if a, ok := verbs[w]; ok {
			in.action, first, verbAt = a, w, i
			break
		}
	}
	if in.action == actNone {
		switch {
		case containsWords(lower, "working directory") || containsWords(lower, "where am i"):
			in.action = actPwd
		case containsWords(lower, "what files") || containsWords(lower, "which files"):
			in.action = actList
		default:
			return in
		}
	}
	if m := rePath.FindStringSubmatch(" " + rest); m != nil {
		in.path = strings.TrimRight(m[1], ".,;:!?")
	}
	if m := reGlob.FindStringSubmatch(" " + rest); m != nil {
		in.pattern = m[1]
	}
	objects := in.words[verbAt+1:]
	if verbAt < 0 {
		objects = in.words
	}
	has := func(ws ...string) bool {
		for _, o := range objects {
			for _, w := range ws {
				if o == w {
					return true
				}
			}
		}
		return false
	}
	fileWords := []string{"file", "files", "directory", "directories", "folder", "folders", "dir", "repo", "repository", "project", "codebase", "code"}
	switch in.action {
	case actList:
		if !has(fileWords...) && !has("contents", "content") && in.path == "" {
			in.action = actNone
		}
	case actRead:
		switch {
		case first == "show" && (has("files", "directory", "folder", "directories", "folders") || in.path == "" && has("contents")):
			in.action = actList
		case in.path == "" || strings.HasSuffix(in.path, "/"):
			if has("directory", "folder", "dir") {
				in.action = actList
			} else {
				in.action = actNone
			}
		}
	case actSearch:
		if has("web", "internet", "online") {
			in.action = actWebSearch
			in.term = searchTerm(text, quoted)
			break
		}
		in.term = searchTerm(text, quoted)
		if in.term == "" {
			in.action = actNone
		}
	case actFind:
		switch {
		case in.pattern != "":
		case len(quoted) > 0 && has("containing", "contain", "contains", "mentioning", "text", "string"):
			in.action, in.term = actSearch, quoted[0]
		case in.path != "" && !strings.HasSuffix(in.path, "/"):
			in.pattern = "*" + path.Base(in.path)
		case has("files", "file"):
			if n := nameAfter(objects, "named", "called"); n != "" {
				in.pattern = "*" + n + "*"
			} else {
				in.pattern = "*"
			}
		default:
			in.action = actNone
		}
	case actRun:
		in.command = commandOf(text, quoted, in.words, verbAt)
		if in.command == "" {
			in.action = actNone
		}
	case actWrite:
		if in.path == "" || !has("file", "files") && !strings.Contains(in.path, ".") {
			in.action = actNone
			break
		}
		in.content = "hello"
		if m := reContent.FindStringSubmatch(text); m != nil {
			in.content = strings.Trim(strings.TrimSpace(m[1]), "\"'`")
		} else if len(quoted) > 0 {
			in.content = quoted[0]
		}
	case actEdit:
		if m := reReplace.FindStringSubmatch(text); m != nil && in.path != "" {
			in.oldText, in.newText = m[1], m[2]
		} else {
			in.action = actNone
		}
	case actDelete:
		if in.path == "" {
			in.action = actNone
		}
	case actFetch:
		if in.url == "" {
			in.action = actNone
		}
	case actWebSearch:
		in.term = searchTerm(text, quoted)
	}
	if in.action == actNone {
		in.path, in.pattern = "", ""
	}
	return in
}

// asksWiki reports whether the request names a wiki or a knowledge base.
func (in *intent) asksWiki() bool {
	for i, w := range in.words {
		if w == "wiki" || w == "knowledge" && i+1 < len(in.words) && in.words[i+1] == "base" {
			return true
		}
	}
	return false
}

// searchTerm is what to look for: a quoted string, else the word after
// "for" in its own case ("search for deadline in the code").
func searchTerm(text string, quoted []string) string {
	if len(quoted) > 0 {
		return quoted[0]
	}
	fields := strings.Fields(stripMarkers(text))
	for i, f := range fields {
		if strings.EqualFold(f, "for") && i+1 < len(fields) {
			if w := strings.Trim(fields[i+1], ".,;:!?"); w != "" && !stopword(strings.ToLower(w)) {
				return w
			}
		}
	}
	return ""
}

func nameAfter(words []string, marks ...string) string {
	for i, w := range words {
		for _, m := range marks {
			if w == m && i+1 < len(words) {
				return words[i+1]
			}
		}
	}
	return ""
}

// commandOf is the command a run request spells out: quoted, after a
// colon, or the words after the verb when they start with a known program.
func commandOf(text string, quoted, words []string, verbAt int) string {
	if len(quoted) > 0 {
		return quoted[0]
	}
	if t := argText(text); t != "" {
		return t
	}
	if verbAt >= 0 && verbAt+1 < len(words) && shellWords[words[verbAt+1]] {
		// The original text from that word on keeps its case and flags.
		fields := strings.Fields(text)
		for i, f := range fields {
			if strings.EqualFold(strings.Trim(f, ".,;:!?"), words[verbAt]) && i+1 < len(fields) {
				return strings.TrimRight(strings.Join(fields[i+1:], " "), ".!?")
			}
		}
	}
	return ""
}

// shellCommand is a POSIX shell command doing what in asks ("" = none).
func (in *intent) shellCommand() string {
	switch in.action {
	case actList:
		if in.path != "" {
			return "ls -la " + shellQuote(in.path)
		}
		return "ls"
	case actRead:
		return "cat " + shellQuote(in.path)
	case actSearch:
		dir := "."
		if in.path != "" {
			dir = shellQuote(in.path)
		}
		return "grep -rn " + shellQuote(in.term) + " " + dir
	case actFind:
		return "find . -name " + shellQuote(path.Base(in.pattern))
	case actRun:
		return in.command
	case actWrite:
		return "printf '%s\\n' " + shellQuote(in.content) + " > " + shellQuote(in.path)
	case actDelete:
		return "rm " + shellQuote(in.path)
	case actFetch:
		return "curl -sL " + shellQuote(in.url)
	case actPwd:
		return "pwd"
	}
	return ""
}

// patch is the apply_patch text doing what in asks ("" = none).
func (in *intent) patch() string {
	switch in.action {
	case actWrite:
		return "*** Begin Patch\n*** Add File: " + in.path + "\n+" + strings.ReplaceAll(in.content, "\n", "\n+") + "\n*** End Patch\n"
	case actEdit:
		return "*** Begin Patch\n*** Update File: " + in.path + "\n@@\n-" + in.oldText + "\n+" + in.newText + "\n*** End Patch\n"
	}
	return ""
}

// absPath is p joined to the working directory when the tool wants an
// absolute path and the agent told us where it runs.
func (in *intent) absPath(p string, absolute bool) string {
	if !absolute || in.cwd == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") {
		return p
	}
	return path.Join(in.cwd, p)
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./*~=:@%+,", r))
	}) < 0 && !strings.ContainsAny(s, "*") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// containsWords reports whether phrase occurs in s on word boundaries.
func containsWords(s, phrase string) bool {
	return wordIndex(s, phrase) >= 0
}
