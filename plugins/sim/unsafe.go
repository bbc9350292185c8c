package sim

import "unsafe"

// unsafeString views b as a string without copying; b must not change
// while the string is in use (request bodies are read-only here).
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
