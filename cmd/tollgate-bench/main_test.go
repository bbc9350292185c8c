package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-gw/tollgate/internal/bench"
)

func TestRunFromJSON(t *testing.T) {
	t.Parallel()
	within := &bench.Results{
		Machine: bench.Machine{NProc: 2, GoVersion: "go1.26.8", Date: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)},
		Window:  "3s", Rounds: 2, PeakRSS: 150 << 20, PeakAnonRSS: 50 << 20,
		Cases: []bench.CaseResult{
			{Case: "completions", Concurrency: 1, AddedP50US: 100, AddedP50Ratio: &bench.Ratio{Value: 1.1}},
			{Case: "completions", Concurrency: 64, Gateway: bench.Side{CPUPerRequestUS: 80}, ThroughputRatio: 0.5,
				CPURatio: &bench.Ratio{Value: 0.9, Rounds: []float64{0.8, 0.95}}},
		},
	}
	over := *within
	over.PeakAnonRSS = 100 << 20
	failed := *within
	failed.Cases = []bench.CaseResult{{Case: "completions", Concurrency: 1, Gateway: bench.Side{Errors: 2}}}
	tests := []struct {
		desc     string
		res      *bench.Results
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{desc: "within budget", res: within, args: []string{"--check"}, wantCode: 0, wantOut: "budget: PASS"},
		{desc: "over budget fails --check", res: &over, args: []string{"--check"}, wantCode: 1, wantOut: "FAIL  anonymous memory"},
		{desc: "over budget without --check", res: &over, wantCode: 0, wantOut: "| completions | 64 | gateway |"},
		{desc: "failed requests are loud", res: &failed, wantCode: 1, wantErr: "2 REQUEST(S) FAILED"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			in := filepath.Join(dir, "in.json")
			if err := tc.res.WriteJSON(in); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			code := run(append([]string{"--from-json", in, "--out", dir}, tc.args...), &out, &errOut)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.wantCode, errOut.String())
			}
			if !strings.Contains(out.String(), tc.wantOut) || !strings.Contains(errOut.String(), tc.wantErr) {
				t.Fatalf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
			}
			for _, f := range []string{"latest.md", "latest.png"} {
				if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
					t.Fatalf("%s not written: %v", f, err)
				}
			}
		})
	}
}

func TestRunBadArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		args []string
		want int
	}{
		{desc: "unknown flag", args: []string{"--nope"}, want: 2},
		{desc: "stray argument", args: []string{"extra"}, want: 2},
		{desc: "absent results file", args: []string{"--from-json", "/nonexistent/latest.json"}, want: 1},
		{desc: "missing binaries", args: []string{"--bin", "/nonexistent", "--duration", "100ms"}, want: 1},
		{desc: "only and no media", args: []string{"--only-media", "--no-media"}, want: 2},
		{desc: "only media on postgres", args: []string{"--only-media", "--store", "postgres"}, want: 2},
		{desc: "only media, missing binaries", args: []string{"--only-media", "--bin", "/nonexistent"}, want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			args := append([]string{"--out", t.TempDir()}, tc.args...)
			if code := run(args, &out, &errOut); code != tc.want {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.want, errOut.String())
			}
		})
	}
}
