package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// The server's timeouts and size caps (docs/operations.md, Timeouts and
// size caps). A zero value in Server means the default below.
const (
	DefaultHeaderTimeout = 30 * time.Second
	DefaultBodyTimeout   = 60 * time.Second
	// Longer than the idle time clients keep connections for (Go's 90 s),
	// or a client would send on a connection the server is closing.
	DefaultIdleTimeout   = 120 * time.Second
	DefaultWriteTimeout  = 60 * time.Second
	DefaultMaxBodyMemory = 512 << 20
	DefaultMaxEventSize  = 16 << 20
	// DefaultMemoryLimit is the gateway's soft memory limit
	// (docs/performance.md, lever 11).
	DefaultMemoryLimit = 64 << 20
	// MinMemoryLimit refuses a memory_limit so low that the process would
	// spend its time collecting (a unit left off: 64 for "64MB").
	MinMemoryLimit = 16 << 20
)

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// HeaderTimeoutOrDefault bounds reading a request's headers.
func (s Server) HeaderTimeoutOrDefault() time.Duration {
	return orDefault(s.HeaderTimeout, DefaultHeaderTimeout)
}

// BodyTimeoutOrDefault bounds reading a request's body.
func (s Server) BodyTimeoutOrDefault() time.Duration {
	return orDefault(s.BodyTimeout, DefaultBodyTimeout)
}

// IdleTimeoutOrDefault closes a kept-alive connection idle that long.
func (s Server) IdleTimeoutOrDefault() time.Duration {
	return orDefault(s.IdleTimeout, DefaultIdleTimeout)
}

// WriteTimeoutOrDefault drops a client that takes no byte for that long.
func (s Server) WriteTimeoutOrDefault() time.Duration {
	return orDefault(s.WriteTimeout, DefaultWriteTimeout)
}

// MaxBodyMemoryOrDefault is the bytes large request bodies may hold at once.
func (s Server) MaxBodyMemoryOrDefault() int64 {
	return orDefault(s.MaxBodyMemory, DefaultMaxBodyMemory)
}

// MemoryLimitOrDefault is the gateway process's soft memory limit.
func (s Server) MemoryLimitOrDefault() int64 {
	return orDefault(s.MemoryLimit, DefaultMemoryLimit)
}

// MaxEventSizeOrDefault is the most bytes one upstream SSE event may hold.
func (s Server) MaxEventSizeOrDefault() int64 {
	return orDefault(s.MaxEventSize, DefaultMaxEventSize)
}

// size decodes a size: a whole number of bytes, or one with a unit (KB,
// MB, GB: powers of 1024, as the docs write them).
func (d *decoder) size(a *hcl.Attribute, where string, dst *int64) {
	if a == nil {
		return
	}
	v, ok := d.value(a, where)
	if !ok {
		return
	}
	var text string
	switch v.Type() {
	case cty.Number:
		text = v.AsBigFloat().Text('f', -1)
	case cty.String:
		text = v.AsString()
	default:
		d.errorf(a.Expr.Range(), where, "%s: want a size such as \"16MB\"", a.Name)
		return
	}
	n, err := ParseSize(text)
	if err != nil {
		d.errorf(a.Expr.Range(), where, "%s: %v", a.Name, err)
		return
	}
	*dst = n
}

// ParseSize reads "16MB", "512 MB", "1GB", "65536" (bytes).
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("%q is not a size (want e.g. \"16MB\", \"512MB\", \"1GB\")", s)
	}
	return n * mult, nil
}

// memoryLimit reads a memory_limit: a size of at least MinMemoryLimit.
func (d *decoder) memoryLimit(a *hcl.Attribute, where string, dst *int64) {
	var n int64
	d.size(a, where, &n)
	if n != 0 && n < MinMemoryLimit {
		d.errorf(a.Expr.Range(), where, "%s: at least %q, got %d bytes (a size is bytes unless it says KB, MB or GB)", a.Name, "16MB", n)
		return
	}
	*dst = n
}
