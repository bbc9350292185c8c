package sim

import (
	"context"
	"testing"

	"github.com/tollgate-gw/tollgate/core/protocol"
	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

type discardSink struct{ n int }

func (d *discardSink) Head(vendor.Head) error     { return nil }
func (d *discardSink) Event(e vendor.Event) error { d.n += len(e.Data); return nil }

// The engine sits under the gateway benchmarks: a 20-word answer, as a
// body and as a stream, per protocol.
func BenchmarkEngine(b *testing.B) {
	e := NewEngine()
	ctx := context.Background()
	for _, p := range protocol.All {
		body := bodyFor(p, "Write one sentence about toll roads, please.", "")
		b.Run(string(p)+"/body", func(b *testing.B) {
			b.ReportAllocs()
			c := call(p, body)
			for b.Loop() {
				if _, err := e.Chat(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(string(p)+"/stream", func(b *testing.B) {
			b.ReportAllocs()
			c := call(p, body)
			sink := &discardSink{}
			for b.Loop() {
				if err := e.Stream(ctx, c, sink); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
