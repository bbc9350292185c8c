package pipeline

import (
	"cmp"
	"hash/fnv"
	"math"
	"net/http"
	"slices"
	"strings"
)

// Session pinning (spec: Agent interface; PRODUCT.md §7): a session_id or
// conversation_id request header keeps a conversation on one channel of
// its model, for prefix-cache hits upstream, while that channel is up. It
// applies to every key, agent or not.
//
// Within each group of candidates dispatch would otherwise shuffle (one
// priority, native or translated), the channels are ranked by weighted
// rendezvous hashing of the session and the channel: the session's first
// choice is the same on every call, and dispatch's breaker order moves a
// channel that is down to the end, so the next in the session's ranking
// serves. One channel going down thus moves only its own sessions, and
// they come back when it does.

// sessionHeaders are the headers that name a conversation, in the order
// they are read, under the keys Go stores them (Session_id).
var sessionHeaders = []string{"Session_id", "Conversation_id"}

// SessionKey is the conversation a request names, "" for none.
func SessionKey(h http.Header) string {
	for _, name := range sessionHeaders {
		if v := strings.TrimSpace(h.Get(name)); v != "" {
			return v
		}
	}
	return ""
}

// orderFor orders a call's candidates: by the session's ranking within
// each group when the call names a session, else as orderCandidates does.
func orderFor(c *Call, cands []Candidate) []Candidate {
	cands = orderCandidates(cands)
	var session string
	if c.Request != nil {
		session = SessionKey(c.Request.Header)
	}
	if session == "" {
		return cands
	}
	for i := 0; i < len(cands); {
		j := i
		for j < len(cands) && cands[j].Channel.Priority == cands[i].Channel.Priority && nativeRank(cands[j]) == nativeRank(cands[i]) {
			j++
		}
		group := cands[i:j]
		slices.SortStableFunc(group, func(a, b Candidate) int {
			return cmp.Or(cmp.Compare(rendezvous(session, b), rendezvous(session, a)), cmp.Compare(a.Channel.Name, b.Channel.Name))
		})
		i = j
	}
	return cands
}

// rendezvous is a channel's weighted score for a session: -weight / ln(u)
// with u uniform in (0, 1) from the hash of both, so a channel of weight 2
// is first for twice the sessions of one of weight 1.
func rendezvous(session string, cand Candidate) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(session))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(cand.Channel.Name))
	x := mix64(h.Sum64())
	u := (float64(x>>11) + 0.5) / (1 << 53)
	return -float64(max(cand.Channel.Weight, 1)) / math.Log(u)
}

// mix64 is splitmix64's finalizer: FNV's low bits alone spread poorly.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
