// Package routes is an http.ServeMux that remembers the patterns it was
// given, so the endpoint reference (docs/reference.md) is checked against
// the routes actually served: a route added without its entry fails a test.
package routes

import "net/http"

// Mux is an http.ServeMux listing its patterns.
type Mux struct {
	*http.ServeMux
	patterns []string
}

// New returns an empty Mux.
func New() *Mux { return &Mux{ServeMux: http.NewServeMux()} }

// Handle registers h for pattern.
func (m *Mux) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

// HandleFunc registers h for pattern.
func (m *Mux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.HandleFunc(pattern, h)
}

// Patterns are the patterns registered, in order.
func (m *Mux) Patterns() []string { return append([]string(nil), m.patterns...) }

// Match returns the pattern that serves method and path, "" for none.
func (m *Mux) Match(method, path string) string {
	r, err := http.NewRequest(method, path, nil)
	if err != nil {
		return ""
	}
	_, pattern := m.Handler(r)
	return pattern
}
