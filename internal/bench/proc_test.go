package bench

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		line    string
		want    Stat
		wantErr string
	}{
		{
			desc: "plain name",
			line: "100 (tollgate) S 1 100 100 0 -1 4194560 1234 0 0 0 250 50 0 0 20 0 12 0 5000 1000000 2000\n",
			want: Stat{PID: 100, PPID: 1, Comm: "tollgate", UTime: 250, STime: 50},
		},
		{
			desc: "name with spaces and parentheses",
			line: "102 (weird ) (name) R 101 100 100 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 5200",
			want: Stat{PID: 102, PPID: 101, Comm: "weird ) (name", UTime: 7, STime: 3},
		},
		{desc: "no name", line: "100 tollgate S 1", wantErr: "no command name"},
		{desc: "too short", line: "100 (x) S 1 2 3", wantErr: "fields after the name"},
		{desc: "bad utime", line: "100 (x) S 1 100 100 0 -1 4194560 1234 0 0 0 x 50 0 0", wantErr: "utime"},
		{desc: "bad pid", line: "abc (x) S 1 100 100 0 -1 4194560 1234 0 0 0 1 50 0 0", wantErr: "pid"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			got, err := ParseStat([]byte(tc.line))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestStatCPU(t *testing.T) {
	t.Parallel()
	if got := (Stat{UTime: 250, STime: 50}).CPU(); got != 3*time.Second {
		t.Fatalf("CPU = %s, want 3s", got)
	}
}

func TestParseVmHWM(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		status  string
		want    int64
		wantErr bool
	}{
		{desc: "present", status: "Name:\tx\nVmPeak:\t  9 kB\nVmHWM:\t   40960 kB\nVmRSS:\t 1 kB\n", want: 40960 * 1024},
		{desc: "absent (kernel thread)", status: "Name:\tkthreadd\nState:\tS\n", wantErr: true},
		{desc: "not in kB", status: "VmHWM:\t 12 MB\n", wantErr: true},
		{desc: "not a number", status: "VmHWM:\t 1x kB\n", wantErr: true},
	}
	t.Run("RssAnon", func(t *testing.T) {
		t.Parallel()
		got, err := ParseRssAnon([]byte("VmHWM:\t 9 kB\nRssAnon:\t   30000 kB\nRssFile:\t 5 kB\n"))
		if err != nil || got != 30000*1024 {
			t.Fatalf("ParseRssAnon = %d, %v", got, err)
		}
	})
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			got, err := ParseVmHWM([]byte(tc.status))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestProcTree(t *testing.T) {
	t.Parallel()
	p := Proc{Root: "testdata/proc"}
	tests := []struct {
		desc string
		root int
		pids []int
		self time.Duration
		kids time.Duration
		rss  int64
		anon int64
		// anonSelf is the root's own part of anon.
		anonSelf int64
		wantErr  bool
	}{
		// 100 is the gateway, 101 its plugin, 102 the plugin's child;
		// 200 is unrelated and must not count.
		{desc: "gateway with descendants", root: 100, pids: []int{100, 101, 102}, self: 300 * ClockTick, kids: (50 + 10) * ClockTick, rss: (40960 + 20480 + 1024) * 1024, anon: (30000 + 10000 + 512) * 1024, anonSelf: 30000 * 1024},
		{desc: "leaf", root: 102, pids: []int{102}, self: 10 * ClockTick, rss: 1024 * 1024, anon: 512 * 1024, anonSelf: 512 * 1024},
		{desc: "no such process", root: 999, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			tree, err := p.Tree(tc.root)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			var pids []int
			for _, s := range tree {
				pids = append(pids, s.PID)
			}
			if len(pids) != len(tc.pids) {
				t.Fatalf("pids = %v, want %v", pids, tc.pids)
			}
			for i := range pids {
				if pids[i] != tc.pids[i] {
					t.Fatalf("pids = %v, want %v", pids, tc.pids)
				}
			}
			cpu, err := p.TreeCPU(tc.root)
			want := CPUSample{Self: tc.self, Children: tc.kids, Procs: len(tc.pids)}
			if err != nil || cpu != want || cpu.Total() != tc.self+tc.kids {
				t.Fatalf("TreeCPU = %+v, %v; want %+v", cpu, err, want)
			}
			rss, err := p.TreePeakRSS(tc.root)
			if err != nil || rss != tc.rss {
				t.Fatalf("TreePeakRSS = %d, %v; want %d", rss, err, tc.rss)
			}
			anon, err := p.TreeRssAnon(tc.root)
			if err != nil || anon != tc.anon {
				t.Fatalf("TreeRssAnon = %d, %v; want %d", anon, err, tc.anon)
			}
			self, plugins, err := p.TreeRssAnonSplit(tc.root)
			if err != nil || self != tc.anonSelf || self+plugins != tc.anon {
				t.Fatalf("TreeRssAnonSplit = %d, %d, %v; want %d and %d", self, plugins, err, tc.anonSelf, tc.anon-tc.anonSelf)
			}
		})
	}
}

// The real /proc must parse too: this process has a stat and a VmHWM.
func TestProcSelf(t *testing.T) {
	t.Parallel()
	p := Proc{Root: "/proc"}
	tree, err := p.Tree(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if tree[0].PID != os.Getpid() {
		t.Fatalf("tree starts at %d", tree[0].PID)
	}
	rss, err := p.TreePeakRSS(os.Getpid())
	if err != nil || rss <= 0 {
		t.Fatalf("TreePeakRSS = %d, %v", rss, err)
	}
}
