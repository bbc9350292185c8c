// Package loglimit keeps a flood of one warning or error from flooding
// the log: each message (per logger name and level) is written at most
// Burst times per interval; the lines held back are counted, and the
// count is written with the next line of that message, or on its own
// when the interval ends ("repeated": how many like it were not written).
package loglimit

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// DefaultEvery is the interval of Wrap.
const DefaultEvery = time.Second

// Burst is how many lines of one message an interval writes.
const Burst = 5

// Wrap returns l with its Warn and Error lines (and Log at those levels)
// limited to Burst per message per interval; every 0 means DefaultEvery.
// Loggers derived from it (Named, With) share the limit.
func Wrap(l hclog.Logger, every time.Duration) hclog.Logger {
	if every <= 0 {
		every = DefaultEvery
	}
	return &logger{Logger: l, lim: &limiter{every: every, now: time.Now, after: time.AfterFunc, seen: map[key]*line{}}}
}

type logger struct {
	hclog.Logger
	lim *limiter
}

type key struct {
	name, msg string
	level     hclog.Level
}

// line is one message's state in the current interval.
type line struct {
	first    time.Time
	written  int           // lines written since first
	held     int           // lines held back since first
	args     []interface{} // of the last one held back
	flushing bool
	l        hclog.Logger
}

type limiter struct {
	every time.Duration
	now   func() time.Time
	after func(time.Duration, func()) *time.Timer

	mu   sync.Mutex
	seen map[key]*line
}

func (l *logger) Warn(msg string, args ...interface{})  { l.Log(hclog.Warn, msg, args...) }
func (l *logger) Error(msg string, args ...interface{}) { l.Log(hclog.Error, msg, args...) }

// Log writes the line unless one like it was written less than an
// interval ago.
func (l *logger) Log(level hclog.Level, msg string, args ...interface{}) {
	if level < hclog.Warn || level < l.Logger.GetLevel() {
		l.Logger.Log(level, msg, args...)
		return
	}
	if out, ok := l.lim.pass(l.Logger, key{l.Logger.Name(), msg, level}, args); ok {
		l.Logger.Log(level, msg, out...)
	}
}

// pass decides whether a line is written now, and with which arguments.
func (m *limiter) pass(l hclog.Logger, k key, args []interface{}) ([]interface{}, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	ln := m.seen[k]
	if ln == nil || now.Sub(ln.first) >= m.every {
		if ln != nil && ln.held > 0 {
			args = append(args[:len(args):len(args)], "repeated", ln.held)
		}
		if ln == nil {
			m.prune(now)
			ln = &line{l: l}
			m.seen[k] = ln
		}
		ln.first, ln.written, ln.held, ln.args = now, 1, 0, nil
		return args, true
	}
	if ln.written < Burst {
		ln.written++
		return args, true
	}
	ln.held++
	ln.args = args
	if !ln.flushing {
		ln.flushing = true
		m.after(ln.first.Add(m.every).Sub(now), func() { m.flush(k) })
	}
	return nil, false
}

// flush writes the count of the lines held back in an interval that
// ended, with the last one's arguments.
func (m *limiter) flush(k key) {
	m.mu.Lock()
	ln := m.seen[k]
	if ln == nil || ln.held == 0 {
		if ln != nil {
			ln.flushing = false
		}
		m.mu.Unlock()
		return
	}
	args := append(ln.args[:len(ln.args):len(ln.args)], "repeated", ln.held)
	ln.first, ln.written, ln.held, ln.args, ln.flushing = m.now(), 1, 0, nil, false
	l := ln.l
	m.mu.Unlock()
	l.Log(k.level, k.msg, args...)
}

// prune forgets the messages quiet for a minute, so messages with varying
// text do not grow the map without end.
func (m *limiter) prune(now time.Time) {
	if len(m.seen) < 1024 {
		return
	}
	for k, ln := range m.seen {
		if now.Sub(ln.first) > time.Minute && !ln.flushing {
			delete(m.seen, k)
		}
	}
}

func (l *logger) With(args ...interface{}) hclog.Logger {
	return &logger{Logger: l.Logger.With(args...), lim: l.lim}
}

func (l *logger) Named(name string) hclog.Logger {
	return &logger{Logger: l.Logger.Named(name), lim: l.lim}
}

func (l *logger) ResetNamed(name string) hclog.Logger {
	return &logger{Logger: l.Logger.ResetNamed(name), lim: l.lim}
}
