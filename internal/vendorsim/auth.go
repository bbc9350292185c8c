package vendorsim

import (
	"net/http"
	"strings"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/sim"
)

// authorized checks the vendor's auth (and, for Anthropic, version)
// headers, answering as the vendor does when they are wrong.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request, p protocol.ID) bool {
	switch p {
	case protocol.AnthropicMessages:
		key := r.Header.Get("X-Api-Key")
		if key == "" {
			key, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		if key == "" {
			writeError(w, p, http.StatusUnauthorized, "", "x-api-key header is required")
			return false
		}
		if !s.keyOK(key) {
			writeError(w, p, http.StatusUnauthorized, "", "invalid x-api-key")
			return false
		}
		if r.Header.Get("Anthropic-Version") == "" {
			writeError(w, p, http.StatusBadRequest, "", "anthropic-version: header is required")
			return false
		}
	case protocol.GeminiNative:
		key := r.Header.Get("X-Goog-Api-Key")
		if key == "" {
			key = r.URL.Query().Get("key")
		}
		if key == "" {
			writeError(w, p, http.StatusForbidden, "", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
			return false
		}
		if !s.keyOK(key) {
			writeError(w, p, http.StatusBadRequest, "", "API key not valid. Please pass a valid API key.")
			return false
		}
	default:
		auth := r.Header.Get("Authorization")
		key, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || key == "" {
			writeError(w, p, http.StatusUnauthorized, "", "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
			return false
		}
		if !s.keyOK(key) {
			writeError(w, p, http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided: "+redact(key)+".")
			return false
		}
	}
	return true
}

func (s *Server) keyOK(key string) bool {
	return s.opts.APIKey == "" || key == s.opts.APIKey
}

// redact shows a key's ends only, as OpenAI's message does.
func redact(key string) string {
	if len(key) <= 8 {
		return "****"
	}
	return key[:3] + "*****" + key[len(key)-4:]
}

func writeError(w http.ResponseWriter, p protocol.ID, status int, code, msg string) {
	for k, v := range sim.ErrorHeaders(status) {
		w.Header()[http.CanonicalHeaderKey(k)] = []string{v}
	}
	w.WriteHeader(status)
	_, _ = w.Write(sim.ErrorBody(p, status, code, msg))
}
