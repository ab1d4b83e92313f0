package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEveryCommandHasHelp runs `shopmind <command> --help` (and -h, and `<command> <sub>
// --help`) for every command the usage lists: each exits 0 and prints that command's usage.
func TestEveryCommandHasHelp(t *testing.T) {
	cmdLine := regexp.MustCompile(`(?m)^\s+shopmind ([a-z0-9-]+)(?: ([a-z][a-z0-9-]*))?`)
	matches := cmdLine.FindAllStringSubmatch(usage(), -1)
	if len(matches) < 8 {
		t.Fatalf("usage lists %d commands, want at least 8:\n%s", len(matches), usage())
	}
	for _, m := range matches {
		invocations := [][]string{{m[1], "--help"}, {m[1], "-h"}}
		if m[2] != "" {
			invocations = append(invocations, []string{m[1], m[2], "--help"})
		}
		for _, args := range invocations {
			out, err := captureStdout(t, func() error { return run(args) })
			if err != nil {
				t.Errorf("shopmind %s: %v (want exit 0)", strings.Join(args, " "), err)
				continue
			}
			if !strings.Contains(out, "shopmind "+m[1]) {
				t.Errorf("shopmind %s printed %q, want the usage of %s", strings.Join(args, " "), out, m[1])
			}
		}
	}
}

func captureStdout(t *testing.T, f func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	ferr := f()
	os.Stdout = old
	_ = w.Close()
	return <-done, ferr
}
