package sim

import (
	"strings"

	"github.com/tidwall/gjson"
)

// maxSchemaDepth bounds nesting and $ref chains, so a recursive schema
// cannot loop.
const maxSchemaDepth = 12

// argGen builds tool arguments valid against a JSON schema: every required
// property and no other, the first enum value, bounds honoured. A string
// property fill knows (by its name: a command, a path...) gets fill's
// value; otherwise the first string filled gets the argument text of the
// prompt (see argText), the rest "sim".
type argGen struct {
	root gjson.Result
	text string
	fill func(name string, s gjson.Result) (string, bool) // nil = none
}

func (g *argGen) value(dst []byte, s gjson.Result, depth int) []byte {
	if depth > maxSchemaDepth {
		return append(dst, "null"...)
	}
	if ref := s.Get(`\$ref`).Str; ref != "" {
		return g.value(dst, g.resolve(ref), depth+1)
	}
	if c := s.Get("const"); c.Exists() {
		return append(dst, c.Raw...)
	}
	if e := s.Get("enum.0"); e.Exists() {
		return append(dst, e.Raw...)
	}
	for _, k := range [...]string{"anyOf", "oneOf", "allOf"} {
		if alt := firstAlt(s.Get(k)); alt.Exists() {
			return g.value(dst, alt, depth+1)
		}
	}
	switch schemaType(s) {
	case "object":
		return g.object(dst, s, depth)
	case "array":
		n := max(s.Get("minItems").Int(), 1)
		if mx := s.Get("maxItems"); mx.Exists() && mx.Int() < n {
			n = mx.Int()
		}
		items := s.Get("items")
		dst = append(dst, '[')
		for i := int64(0); i < n; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = g.value(dst, items, depth+1)
		}
		return append(dst, ']')
	case "integer":
		return appendInt(dst, intIn(s))
	case "number":
		if m := s.Get("minimum"); m.Exists() {
			return append(dst, m.Raw...)
		}
		return appendInt(dst, intIn(s))
	case "boolean":
		return append(dst, "true"...)
	case "null":
		return append(dst, "null"...)
	default:
		return appendStr(dst, g.str(s))
	}
}

func (g *argGen) object(dst []byte, s gjson.Result, depth int) []byte {
	props := s.Get("properties")
	dst = append(dst, '{')
	first := true
	s.Get("required").ForEach(func(_, name gjson.Result) bool {
		if name.Type != gjson.String {
			return true
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendStr(dst, name.Str)
		dst = append(dst, ':')
		ps := props.Get(gjson.Escape(name.Str))
		if v, ok := g.filled(name.Str, ps); ok {
			dst = append(dst, v...)
			return true
		}
		dst = g.value(dst, ps, depth+1)
		return true
	})
	return append(dst, '}')
}

// filled is fill's value for a property of a string type, or of an argv
// array (["bash", "-lc", command]), when fill has one that fits the
// schema's bounds.
func (g *argGen) filled(name string, s gjson.Result) ([]byte, bool) {
	if g.fill == nil || s.Get("enum").Exists() || s.Get("const").Exists() {
		return nil, false
	}
	switch schemaType(s) {
	case "string":
		v, ok := g.fill(name, s)
		if !ok || !fits(s, v) {
			return nil, false
		}
		return appendStr(nil, v), true
	case "array":
		items := s.Get("items")
		if schemaType(items) != "string" || !isShellKey(propKey(name)) || s.Get("maxItems").Exists() && s.Get("maxItems").Int() < 3 {
			return nil, false
		}
		v, ok := g.fill(name, items)
		if !ok || v == "" {
			return nil, false
		}
		b := append(appendStr(append(appendStr([]byte{'['}, "bash"), ','), "-lc"), ',')
		return append(appendStr(b, v), ']'), true
	}
	return nil, false
}

// fits reports whether v meets a string schema's length bounds and format.
func fits(s gjson.Result, v string) bool {
	if mn := s.Get("minLength"); mn.Exists() && int64(len(v)) < mn.Int() {
		return false
	}
	if mx := s.Get("maxLength"); mx.Exists() && int64(len(v)) > mx.Int() {
		return false
	}
	return !s.Get("format").Exists() || s.Get("format").Str == "uri" || s.Get("format").Str == "url"
}

// resolve follows a local reference (#/$defs/x, #/definitions/x, #).
func (g *argGen) resolve(ref string) gjson.Result {
	path, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return gjson.Result{}
	}
	path = strings.TrimPrefix(path, "/")
	if path == "" {
		return g.root
	}
	v := g.root
	for seg := range strings.SplitSeq(path, "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		v = v.Get(gjson.Escape(seg))
	}
	return v
}

func (g *argGen) str(s gjson.Result) string {
	v := "sim"
	if g.text != "" {
		v, g.text = g.text, ""
	}
	switch s.Get("format").Str {
	case "date-time":
		v = "2025-01-01T00:00:00Z"
	case "date":
		v = "2025-01-01"
	case "time":
		v = "00:00:00"
	case "email":
		v = "sim@example.com"
	case "uri", "url":
		v = "https://example.com/sim"
	case "uuid":
		v = "00000000-0000-4000-8000-000000000000"
	}
	if mn := int(s.Get("minLength").Int()); len(v) < mn {
		v += strings.Repeat("x", mn-len(v))
	}
	if mx := s.Get("maxLength"); mx.Exists() && int(mx.Int()) < len(v) {
		v = v[:max(mx.Int(), 0)]
	}
	return v
}

// schemaType is the schema's type in lower case (Gemini writes STRING,
// OBJECT...), the first non-null one of a type list, or guessed from the
// keywords present.
func schemaType(s gjson.Result) string {
	t := s.Get("type")
	var ty string
	if t.IsArray() {
		t.ForEach(func(_, v gjson.Result) bool {
			ty = v.Str
			return strings.EqualFold(ty, "null")
		})
	} else {
		ty = t.Str
	}
	if ty == "" {
		switch {
		case s.Get("properties").Exists() || s.Get("required").Exists():
			return "object"
		case s.Get("items").Exists():
			return "array"
		}
		return "string"
	}
	return strings.ToLower(ty)
}

func firstAlt(alts gjson.Result) gjson.Result {
	var pick gjson.Result
	alts.ForEach(func(_, v gjson.Result) bool {
		if schemaType(v) == "null" && !v.Get("enum").Exists() {
			return true
		}
		pick = v
		return false
	})
	return pick
}

// intIn is 1 moved into the schema's bounds.
func intIn(s gjson.Result) int64 {
	n := int64(1)
	if m := s.Get("minimum"); m.Exists() {
		n = int64(m.Float())
		if float64(n) < m.Float() {
			n++
		}
	}
	if m := s.Get("exclusiveMinimum"); m.Type == gjson.Number && float64(n) <= m.Float() {
		n = int64(m.Float()) + 1
	}
	if m := s.Get("maximum"); m.Exists() && float64(n) > m.Float() {
		n = int64(m.Float())
	}
	return n
}

// argText is the value a prompt gives its tool: what follows the last
// colon ("Use the Bash tool to run: echo hi" gives "echo hi"), markers
// removed; "" when there is none.
func argText(userText string) string {
	t := stripMarkers(userText)
	i := strings.LastIndexByte(t, ':')
	if i < 0 {
		return ""
	}
	return strings.TrimSpace(t[i+1:])
}

// toolArgs appends the JSON arguments for a call of t.
func toolArgs(dst []byte, t toolDef, userText string) []byte {
	return toolArgsWith(dst, t, &argGen{root: t.schema, text: argText(userText)})
}

func toolArgsWith(dst []byte, t toolDef, g *argGen) []byte {
	if !t.schema.Exists() || t.schema.Type == gjson.Null {
		return append(dst, "{}"...)
	}
	return g.value(dst, t.schema, 0)
}
