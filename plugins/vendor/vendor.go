// Package vendor is the public Go face of a vendor plugin: the interface a
// vendor implements and the types that cross the plugin boundary. The gRPC
// transport (proto/vendorplugin/v1) is converted to and from these types here, so
// vendors and the host never touch generated code.
package vendor

import (
	"context"
	"time"
)

// Description names a plugin and what it speaks.
type Description struct {
	Name      string
	Protocols []string // protocol ids it can speak upstream
	Families  []string
	Version   string
	// Specs are the endpoint families it serves through Jobs, with their
	// routes: the gateway builds its route table from them.
	Specs []FamilySpec
}

// Channel is one upstream the operator configured for this vendor.
type Channel struct {
	Name      string
	BaseURL   string
	APIKey    string
	Protocols []string
	Settings  map[string]string
}

// Config is everything a plugin is told: its channels and its own settings.
type Config struct {
	Channels []Channel
	Settings map[string]string
	// AllowPrivateURLs is the gateway's server { allow_private_urls }: a
	// URL a client hands over (a reference image the plugin fetches) may
	// reach private, loopback and link-local addresses. False: refuse them
	// (PRODUCT §7, URLs the gateway is handed). Channel base URLs are the
	// operator's and never subject to it.
	AllowPrivateURLs bool
	// MaxEventBytes is the gateway's server { max_event_size }: the most
	// bytes one upstream SSE event (or line) may hold. Past it the call
	// ends as an upstream error (FailureBroken) without the plugin's
	// memory growing. 0: sse.DefaultMaxEvent.
	MaxEventBytes int64
}

// ChatRequest is one upstream chat call.
type ChatRequest struct {
	Channel     string
	Protocol    string // protocol to speak upstream; Body is already in it
	Model       string // upstream model id
	Body        []byte
	Stream      bool
	Headers     map[string]string // client headers to forward, lower-case names
	Timeout     time.Duration     // whole call; 0 = only the context
	IdleTimeout time.Duration     // between stream events; 0 = none
	RequestID   string
	Operation   string // "" for chat, OpCountTokens for the token counter
}

// OpCountTokens asks a messages upstream to count tokens.
const OpCountTokens = "count_tokens"

// ChatResponse is the upstream's answer, verbatim.
type ChatResponse struct {
	Status  int
	Body    []byte
	Headers map[string]string // selected headers, lower-case names
}

// Head opens a stream: the upstream status, and for a non-2xx status its
// error body (no events follow then).
type Head struct {
	Status  int
	Headers map[string]string
	Body    []byte
}

// Event is one upstream SSE event.
type Event struct {
	Name string
	Data []byte
}

// Sink receives a stream: Head exactly once, then Event per upstream event.
// An error from the sink (the client went away) must stop the upstream call.
type Sink interface {
	Head(Head) error
	Event(Event) error
}

// BatchSink is a Sink that also takes several events at once: those that
// arrived together from the upstream, so it can write and flush them as
// one. Vendors and transports use it when the sink offers it.
type BatchSink interface {
	Sink
	// Events receives a non-empty batch in order. The slice is the
	// caller's; the events' Data may be kept.
	Events([]Event) error
}

// SendEvents delivers evs to s, in one call when s is a BatchSink.
func SendEvents(s Sink, evs []Event) error {
	if len(evs) == 0 {
		return nil
	}
	if b, ok := s.(BatchSink); ok {
		return b.Events(evs)
	}
	for _, e := range evs {
		if err := s.Event(e); err != nil {
			return err
		}
	}
	return nil
}

// FailureKind says why an upstream call produced no (complete) answer.
type FailureKind int

const (
	FailureUnknown  FailureKind = iota
	FailureConnect              // DNS, TCP or TLS: nothing reached the upstream
	FailureTimeout              // total or idle timeout
	FailureCanceled             // the caller cancelled
	FailureBroken               // the upstream broke the connection or protocol mid-answer
	FailureConfig               // channel unknown to the plugin
)

// Failure is a domain failure of an upstream call. It is returned as an error
// by Chat and ChatStream; transport faults are other errors.
type Failure struct {
	Kind    FailureKind
	Message string
	// PluginDied is set by the plugin host (never sent by a plugin) on a
	// call whose plugin process was down, or died before the call's
	// answer began: nothing reached the client, so the call may be made
	// again once the plugin is back.
	PluginDied bool
}

func (f *Failure) Error() string { return f.Message }

// Vendor is implemented by every vendor plugin.
type Vendor interface {
	Describe(ctx context.Context) (Description, error)
	Configure(ctx context.Context, cfg Config) error
	// Chat makes one non-streaming call. A non-2xx upstream answer is a
	// ChatResponse, not an error; *Failure reports calls without an answer.
	Chat(ctx context.Context, req *ChatRequest) (*ChatResponse, error)
	// ChatStream makes one streaming call, feeding sink. It returns nil after
	// a complete stream, *Failure when the upstream broke or never answered.
	ChatStream(ctx context.Context, req *ChatRequest, sink Sink) error
}
