package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// ClockTick is the unit of utime and stime in /proc/PID/stat. USER_HZ is
// 100 on every Linux architecture Go supports (the kernel scales to it).
const ClockTick = 10 * time.Millisecond

// Stat is what the harness reads from one /proc/PID/stat line.
type Stat struct {
	PID, PPID int
	Comm      string
	// UTime and STime are CPU ticks spent in user and kernel mode.
	UTime, STime uint64
}

// CPU is the process's user plus system CPU time.
func (s Stat) CPU() time.Duration { return time.Duration(s.UTime+s.STime) * ClockTick }

// ParseStat parses a /proc/PID/stat line. The command name sits in
// parentheses and may itself hold spaces and parentheses, so the fields
// are counted from the last ')'.
func ParseStat(line []byte) (Stat, error) {
	open := bytes.IndexByte(line, '(')
	end := bytes.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return Stat{}, fmt.Errorf("proc stat: no command name in %q", truncate(line))
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line[:open])))
	if err != nil {
		return Stat{}, fmt.Errorf("proc stat: pid: %w", err)
	}
	// Fields after the name: state(3) ppid(4) ... utime(14) stime(15).
	rest := bytes.Fields(line[end+1:])
	if len(rest) < 13 {
		return Stat{}, fmt.Errorf("proc stat: %d fields after the name, want at least 13", len(rest))
	}
	s := Stat{PID: pid, Comm: string(line[open+1 : end])}
	if s.PPID, err = strconv.Atoi(string(rest[1])); err != nil {
		return Stat{}, fmt.Errorf("proc stat: ppid: %w", err)
	}
	if s.UTime, err = strconv.ParseUint(string(rest[11]), 10, 64); err != nil {
		return Stat{}, fmt.Errorf("proc stat: utime: %w", err)
	}
	if s.STime, err = strconv.ParseUint(string(rest[12]), 10, 64); err != nil {
		return Stat{}, fmt.Errorf("proc stat: stime: %w", err)
	}
	return s, nil
}

// ParseVmHWM returns the peak resident set size from a /proc/PID/status
// file's VmHWM line, in bytes. It counts file-backed pages too (Badger's
// memory-mapped tables and value log).
func ParseVmHWM(status []byte) (int64, error) { return parseStatusKB(status, "VmHWM:") }

// ParseRssAnon returns the current anonymous resident memory (the Go heap,
// stacks, Badger's arenas and caches) from a /proc/PID/status, in bytes.
func ParseRssAnon(status []byte) (int64, error) { return parseStatusKB(status, "RssAnon:") }

func parseStatusKB(status []byte, field string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Bytes()
		v, ok := bytes.CutPrefix(line, []byte(field))
		if !ok {
			continue
		}
		f := bytes.Fields(v)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("proc status: unexpected %s line %q", field, line)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proc status: %s %w", field, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("proc status: no %s line", field)
}

func truncate(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// Proc reads process figures under a /proc root (a fixture dir in tests).
type Proc struct {
	Root string
}

// Stat reads one process's stat line.
func (p Proc) Stat(pid int) (Stat, error) {
	b, err := os.ReadFile(filepath.Join(p.Root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(b)
}

// Tree returns root's stat followed by those of all its descendants (the
// gateway's plugin processes), found through the ppid of every process.
func (p Proc) Tree(root int) ([]Stat, error) {
	self, err := p.Stat(root)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p.Root)
	if err != nil {
		return nil, err
	}
	children := map[int][]Stat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == root {
			continue
		}
		s, err := p.Stat(pid)
		if err != nil {
			continue // exited meanwhile, or not a process directory
		}
		children[s.PPID] = append(children[s.PPID], s)
	}
	out := []Stat{self}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i].PID]...)
	}
	return out, nil
}

// CPUSample is the CPU time of a process tree at one moment.
type CPUSample struct {
	Self     time.Duration // the root process (the gateway)
	Children time.Duration // its descendants (the plugins)
	Procs    int
}

// Total is the CPU time of the whole tree.
func (c CPUSample) Total() time.Duration { return c.Self + c.Children }

// TreeCPU samples the CPU time of root and its descendants.
func (p Proc) TreeCPU(root int) (CPUSample, error) {
	tree, err := p.Tree(root)
	if err != nil {
		return CPUSample{}, err
	}
	c := CPUSample{Self: tree[0].CPU(), Procs: len(tree)}
	for _, s := range tree[1:] {
		c.Children += s.CPU()
	}
	return c, nil
}

// TreePeakRSS sums VmHWM over root and its descendants: an upper bound of
// their simultaneous peak, since each peaked at its own moment.
func (p Proc) TreePeakRSS(root int) (int64, error) { return p.treeStatus(root, ParseVmHWM) }

// TreeRssAnon sums the current RssAnon over root and its descendants.
func (p Proc) TreeRssAnon(root int) (int64, error) {
	self, children, err := p.TreeRssAnonSplit(root)
	return self + children, err
}

// TreeRssAnonSplit is TreeRssAnon's root (the gateway) and descendants
// (its plugins) apart.
func (p Proc) TreeRssAnonSplit(root int) (self, children int64, err error) {
	return p.treeStatusSplit(root, ParseRssAnon)
}

func (p Proc) treeStatus(root int, parse func([]byte) (int64, error)) (int64, error) {
	self, children, err := p.treeStatusSplit(root, parse)
	return self + children, err
}

func (p Proc) treeStatusSplit(root int, parse func([]byte) (int64, error)) (self, children int64, err error) {
	tree, err := p.Tree(root)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range tree {
		b, err := os.ReadFile(filepath.Join(p.Root, strconv.Itoa(s.PID), "status"))
		if err != nil {
			if s.PID == root {
				return 0, 0, err
			}
			continue
		}
		v, err := parse(b)
		if err != nil {
			return 0, 0, fmt.Errorf("pid %d: %w", s.PID, err)
		}
		if s.PID == root {
			self = v
		} else {
			children += v
		}
	}
	return self, children, nil
}
