package codec

import "strconv"

// val is a JSON value Rewrite writes.
type val struct {
	kind byte // 's' string, 'i' integer, 'r' raw JSON
	s    string
	i    int64
}

func strVal(s string) val { return val{kind: 's', s: s} }
func intVal(i int64) val  { return val{kind: 'i', i: i} }
func rawVal(s string) val { return val{kind: 'r', s: s} }

func (v val) appendTo(dst []byte) []byte {
	switch v.kind {
	case 's':
		return appendQuoted(dst, v.s)
	case 'i':
		return strconv.AppendInt(dst, v.i, 10)
	}
	return append(dst, v.s...)
}

// edit replaces s[at:end] (an insertion when at == end). An insertion
// writes a whole member: an optional comma, "name": and the value.
type edit struct {
	at, end int
	comma   bool
	name    string
	v       val
}

// edits collects the changes of one Rewrite; a few fit without allocating.
type edits struct {
	list [6]edit
	more []edit
	n    int
}

func (e *edits) add(ed edit) {
	if e.n < len(e.list) {
		e.list[e.n] = ed
	} else {
		e.more = append(e.more, ed)
	}
	e.n++
}

func (e *edits) at(k int) *edit {
	if k < len(e.list) {
		return &e.list[k]
	}
	return &e.more[k-len(e.list)]
}

// replace sets the value at [vs, ve).
func (e *edits) replace(vs, ve int, v val) {
	e.add(edit{at: vs, end: ve, v: v})
}

// insert appends the member name: v to the object whose walk it finished
// (it must have reached the closing brace) and whose '{' is at start.
func (e *edits) insert(it *iter, start int, name string, v val) {
	at := it.lastEnd(start)
	comma := it.n > 0
	for k := 0; k < e.n && !comma; k++ {
		// A second insertion into the same (possibly empty) object.
		if ed := e.at(k); ed.name != "" && ed.at == at {
			comma = true
		}
	}
	e.add(edit{at: at, end: at, comma: comma, name: name, v: v})
}

// apply builds the rewritten body: every byte outside the edits is copied
// as it was. With no edits it returns body itself.
func (e *edits) apply(body []byte) []byte {
	if e.n == 0 {
		return body
	}
	// Insertion sort by position: the list is tiny and nearly sorted.
	for k := 1; k < e.n; k++ {
		for j := k; j > 0 && e.at(j).at < e.at(j-1).at; j-- {
			*e.at(j), *e.at(j - 1) = *e.at(j - 1), *e.at(j)
		}
	}
	size := len(body)
	for k := 0; k < e.n; k++ {
		ed := e.at(k)
		size += len(ed.name) + len(ed.v.s) + 32
	}
	out := make([]byte, 0, size)
	prev := 0
	for k := 0; k < e.n; k++ {
		ed := e.at(k)
		out = append(out, body[prev:ed.at]...)
		if ed.name != "" {
			if ed.comma {
				out = append(out, ',')
			}
			out = appendQuoted(out, ed.name)
			out = append(out, ':')
		}
		out = ed.v.appendTo(out)
		prev = ed.end
	}
	return append(out, body[prev:]...)
}

// openForRewrite checks the top-level shape cheaply; Inspect has already
// validated the body on the request path.
func openForRewrite(body []byte) (string, int, error) {
	s := str(body)
	start := skipWS(s, 0)
	if start == len(s) || s[start] != '{' {
		return "", 0, invalid("the request body must be a JSON object")
	}
	return s, start, nil
}

// malformed is Rewrite's error for a body its walk could not follow.
func malformed() error {
	return invalid("the request body is not valid JSON")
}

// setNested sets member name (or its alias) inside the object value
// [vs, ve) of s, inserting name when neither is present.
func setNested(e *edits, s string, vs int, name, alias string, v val) error {
	it := members(s, vs)
	found := false
	for {
		k, ivs, ive, ok := it.next()
		if !ok {
			break
		}
		if kn := keyName(k); kn == name || (alias != "" && kn == alias) {
			e.replace(ivs, ive, v)
			found = true
		}
	}
	if it.bad {
		return malformed()
	}
	if !found {
		e.insert(&it, vs, name, v)
	}
	return nil
}

func appendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }
