package host_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/plugins/vendor"
)

// The plugin hop through a real plugin process (internal/testcrash, the
// echo vendor: no upstream, so what is measured is the hop) over the data
// plane, one call at a time (c=1: every call pays its own wake-ups) and 64
// at once. Besides ns/op each reports the CPU per call of this process
// (the host side, with the benchmark's own loop) and of the plugin's.

func BenchmarkPluginHopUnary(b *testing.B) {
	req := request("hi", false)
	hop(b, func(v vendor.Vendor, _ *countSink) error {
		resp, err := v.Chat(b.Context(), req)
		if err == nil && resp.Status != 200 {
			b.Fatal(resp.Status)
		}
		return err
	})
}

func BenchmarkPluginHopStream20(b *testing.B) {
	req := request("hi [echo:events=20]", true)
	hop(b, func(v vendor.Vendor, s *countSink) error {
		s.n = 0
		err := v.ChatStream(b.Context(), req, s)
		if err == nil && s.n != 20 {
			b.Fatal(s.n)
		}
		return err
	})
}

func hop(b *testing.B, call func(vendor.Vendor, *countSink) error) {
	_, v := start(b, nil)
	pid, _, err := report(b.Context(), v)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("c=1", func(b *testing.B) {
		var s countSink
		measure(b, pid, func() {
			for b.Loop() {
				if err := call(v, &s); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("c=64", func(b *testing.B) {
		measure(b, pid, func() {
			b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.RunParallel(func(pb *testing.PB) {
				var s countSink
				for pb.Next() {
					if err := call(v, &s); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	})
}

// measure runs f and reports the CPU per op of this process and of pid.
func measure(b *testing.B, pid int, f func()) {
	b.ReportAllocs()
	self, plugin := cpuTime(b, os.Getpid()), cpuTime(b, pid)
	f()
	n := float64(b.N)
	self, plugin = cpuTime(b, os.Getpid())-self, cpuTime(b, pid)-plugin
	b.ReportMetric(float64(self.Microseconds())/n, "host-cpu-µs/op")
	b.ReportMetric(float64(plugin.Microseconds())/n, "plugin-cpu-µs/op")
}

// cpuTime is the CPU time of every thread of pid so far, from the
// scheduler's nanosecond counters (/proc/PID/task/TID/schedstat), finer
// than stat's 10 ms ticks.
func cpuTime(b *testing.B, pid int) time.Duration {
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	if err != nil || len(tasks) == 0 {
		b.Fatalf("schedstat of %d: %v", pid, err)
	}
	var sum int64
	for _, t := range tasks {
		line, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			b.Fatalf("%s: %q", t, line)
		}
		sum += ns
	}
	return time.Duration(sum)
}

// countSink counts events and keeps nothing.
type countSink struct{ n int }

func (c *countSink) Head(vendor.Head) error   { return nil }
func (c *countSink) Event(vendor.Event) error { c.n++; return nil }
