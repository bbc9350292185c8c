package translate

import (
	"strings"

	"github.com/tidwall/gjson"
)

// Gemini's function parameters are an OpenAPI subset: it refuses JSON
// Schema keys it does not know ($schema, additionalProperties, $ref, ...),
// takes only string enums, and marks nullability with "nullable" instead
// of a type array.

// geminiSchemaKeys are the keys copied verbatim into a Gemini schema.
var geminiSchemaKeys = map[string]bool{
	"description": true, "title": true, "nullable": true, "required": true,
	"minItems": true, "maxItems": true, "minProperties": true, "maxProperties": true,
	"minLength": true, "maxLength": true, "pattern": true, "minimum": true, "maximum": true,
	"default": true, "example": true, "propertyOrdering": true,
}

// geminiFormats are the formats Gemini accepts.
var geminiFormats = map[string]bool{"enum": true, "date-time": true, "int32": true, "int64": true, "float": true, "double": true}

// maxSchemaDepth bounds recursion on hostile schemas.
const maxSchemaDepth = 64

// appendGeminiSchema writes s cleaned for Gemini.
func appendGeminiSchema(b []byte, s gjson.Result, depth int) []byte {
	if !isObject(s) || depth > maxSchemaDepth {
		return append(b, "{}"...)
	}
	b = append(b, '{')
	nullable := false
	s.ForEach(func(k, v gjson.Result) bool {
		switch name := k.Str; {
		case name == "type":
			switch {
			case v.Type == gjson.String:
				b = keyRaw(b, "type", v.Raw)
			case isArray(v):
				first := ""
				v.ForEach(func(_, t gjson.Result) bool {
					if t.Str == "null" {
						nullable = true
					} else if first == "" && t.Type == gjson.String {
						first = t.Raw
					}
					return true
				})
				if first != "" {
					b = keyRaw(b, "type", first)
				}
			}
		case name == "properties":
			if !isObject(v) {
				return true
			}
			b = append(key(b, "properties"), '{')
			v.ForEach(func(pk, pv gjson.Result) bool {
				b = append(sep(b), pk.Raw...)
				b = append(b, ':')
				b = appendGeminiSchema(b, pv, depth+1)
				return true
			})
			b = append(b, '}')
		case name == "items":
			if isArray(v) {
				v = v.Get("0")
			}
			b = appendGeminiSchema(key(b, "items"), v, depth+1)
		case name == "anyOf" || name == "oneOf":
			if !isArray(v) {
				return true
			}
			b = append(key(b, "anyOf"), '[')
			v.ForEach(func(_, sub gjson.Result) bool {
				if sub.Get("type").Str == "null" {
					nullable = true
					return true
				}
				b = appendGeminiSchema(sep(b), sub, depth+1)
				return true
			})
			b = append(b, ']')
		case name == "enum":
			if allStrings(v) {
				b = keyRaw(b, "enum", v.Raw)
			}
		case name == "const":
			if v.Type == gjson.String {
				b = append(key(b, "enum"), '[')
				b = append(b, v.Raw...)
				b = append(b, ']')
			}
		case name == "format":
			if geminiFormats[v.Str] {
				b = keyRaw(b, "format", v.Raw)
			}
		case name == "nullable":
			nullable = nullable || v.Type == gjson.True
		case geminiSchemaKeys[name]:
			b = keyRaw(b, name, v.Raw)
		}
		return true
	})
	if nullable {
		b = append(key(b, "nullable"), "true"...)
	}
	return append(b, '}')
}

func allStrings(v gjson.Result) bool {
	if !isArray(v) {
		return false
	}
	ok := true
	v.ForEach(func(_, e gjson.Result) bool {
		ok = e.Type == gjson.String
		return ok
	})
	return ok
}

// emptyObjectSchema reports whether s is an object schema with no
// properties, which Gemini refuses as function parameters.
func emptyObjectSchema(s gjson.Result) bool {
	p := s.Get("properties")
	return !present(p) || p.Raw == "{}" || strings.TrimSpace(strings.Trim(p.Raw, "{}")) == ""
}

// appendJSONSchema writes a Gemini schema as JSON Schema: types
// lower-cased, "nullable" folded into a type array, Gemini-only keys gone.
func appendJSONSchema(b []byte, s gjson.Result, depth int) []byte {
	if !isObject(s) || depth > maxSchemaDepth {
		return append(b, "{}"...)
	}
	nullable := s.Get("nullable").Type == gjson.True
	b = append(b, '{')
	s.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			if v.Type != gjson.String {
				return true
			}
			t := strings.ToLower(v.Str)
			if t == "type_unspecified" {
				return true
			}
			b = key(b, "type")
			if nullable {
				b = append(appendStr(append(b, '['), t), `,"null"]`...)
			} else {
				b = appendStr(b, t)
			}
		case "properties":
			if !isObject(v) {
				return true
			}
			b = append(key(b, "properties"), '{')
			v.ForEach(func(pk, pv gjson.Result) bool {
				b = append(sep(b), pk.Raw...)
				b = append(b, ':')
				b = appendJSONSchema(b, pv, depth+1)
				return true
			})
			b = append(b, '}')
		case "items":
			b = appendJSONSchema(key(b, "items"), v, depth+1)
		case "anyOf":
			if !isArray(v) {
				return true
			}
			b = append(key(b, "anyOf"), '[')
			v.ForEach(func(_, sub gjson.Result) bool {
				b = appendJSONSchema(sep(b), sub, depth+1)
				return true
			})
			b = append(b, ']')
		case "nullable", "propertyOrdering", "example":
		default:
			b = append(sep(b), k.Raw...)
			b = append(b, ':')
			b = append(b, v.Raw...)
		}
		return true
	})
	return append(b, '}')
}
