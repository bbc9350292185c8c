package main

import (
	"bytes"
	"strings"
	"testing"
)

// A small run, so the bench cannot rot between make bench runs.
func TestRunSmall(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), 500, 2, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| owner (the whole account) | overview |", "| member (one key of eight) | logs, a row's technical view |", "CSV export"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the report lacks %q:\n%s", want, out.String())
		}
	}
}
