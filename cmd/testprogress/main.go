// Command testprogress turns `go test -json` on standard input into progress lines: one when
// a package's tests start, one when they end (status, time, counts), a line every minute
// naming the packages still running, and at the end the full output of every failed test
// (and of every failed package: build errors, panics, timeouts). It exits 1 when anything
// failed, so `make test` fails with it.
//
//	go test -count=1 -json ./... | go run ./cmd/testprogress
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

const module = "github.com/shopmind/shopmind/"

// event is a test2json event, or (Go 1.24+) a build event of `go test -json`.
type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
	ImportPath  string // build events
}

// pkg is one package's state.
type pkg struct {
	name                 string
	started              time.Time
	announced            bool
	passed, failed, skip int
	// output holds, in arrival order, the lines of tests not known to have passed and of the
	// package itself ("" test).
	output []line
	// failedTests are the top-level tests that failed, in order.
	failedTests []string
	done        bool
}

type line struct{ test, text string }

type progress struct {
	mu       sync.Mutex
	out      io.Writer
	now      func() time.Time
	pkgs     map[string]*pkg
	order    []string
	builds   map[string][]string // build output by import path
	noTests  int
	failures []*pkg
	okCount  int
	began    time.Time
}

func main() {
	p := newProgress(os.Stdout, time.Now)
	ticker := time.NewTicker(time.Minute)
	defer ticker.Stop()
	go func() {
		for range ticker.C {
			p.heartbeat()
		}
	}()
	os.Exit(p.run(os.Stdin))
}

func newProgress(out io.Writer, now func() time.Time) *progress {
	return &progress{out: out, now: now, pkgs: map[string]*pkg{}, builds: map[string][]string{}, began: now()}
}

func short(name string) string { return strings.ReplaceAll(name, module, "") }

// run reads the stream to its end and prints the summary; it returns the exit status.
func (p *progress) run(in io.Reader) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	bad := false
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Action == "" {
			// Not an event (the go command's own messages): pass it through.
			p.mu.Lock()
			fmt.Fprintln(p.out, sc.Text())
			p.mu.Unlock()
			continue
		}
		p.handle(ev)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(p.out, "testprogress: reading the stream:", err)
		bad = true
	}
	return p.summary(bad)
}

func (p *progress) get(name string) *pkg {
	k := p.pkgs[name]
	if k == nil {
		k = &pkg{name: name, started: p.now()}
		p.pkgs[name] = k
		p.order = append(p.order, name)
	}
	return k
}

func (p *progress) handle(ev event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Action {
	case "build-output":
		p.builds[ev.ImportPath] = append(p.builds[ev.ImportPath], ev.Output)
		return
	case "build-fail":
		return
	}
	if ev.Package == "" {
		return
	}
	k := p.get(ev.Package)
	announce := func() {
		if !k.announced {
			k.announced = true
			fmt.Fprintf(p.out, "start %s\n", short(k.name))
		}
	}
	top, _, isSub := strings.Cut(ev.Test, "/")
	switch {
	case ev.Action == "start":
		k.started = p.now()
	case ev.Action == "run":
		announce()
	case ev.Action == "output":
		if ev.Test == "" && strings.Contains(ev.Output, "[no test files]") {
			return
		}
		k.output = append(k.output, line{ev.Test, ev.Output})
	case ev.Test != "" && (ev.Action == "pass" || ev.Action == "skip"):
		if !isSub {
			if ev.Action == "pass" {
				k.passed++
			} else {
				k.skip++
			}
			k.drop(top)
		}
	case ev.Test != "" && ev.Action == "fail":
		if !isSub {
			k.failed++
			k.failedTests = append(k.failedTests, top)
		}
	case ev.Test == "" && (ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip"):
		k.done = true
		counts := fmt.Sprintf("%d passed", k.passed)
		if k.skip > 0 {
			counts += fmt.Sprintf(", %d skipped", k.skip)
		}
		switch {
		case ev.Action == "skip" && !k.announced:
			p.noTests++
		case ev.Action == "fail":
			announce()
			p.failures = append(p.failures, k)
			why := counts + fmt.Sprintf(", %d failed", k.failed)
			if ev.FailedBuild != "" {
				why = "build failed: " + short(ev.FailedBuild)
				k.output = append(k.output, line{"", strings.Join(p.builds[ev.FailedBuild], "")})
			}
			fmt.Fprintf(p.out, "FAIL  %s  %.1fs  (%s)\n", short(k.name), ev.Elapsed, why)
		default:
			announce()
			p.okCount++
			fmt.Fprintf(p.out, "ok    %s  %.1fs  (%s)\n", short(k.name), ev.Elapsed, counts)
		}
	}
}

// drop forgets the output of a passed or skipped top-level test and its subtests.
func (k *pkg) drop(top string) {
	kept := k.output[:0]
	for _, l := range k.output {
		if l.test != top && !strings.HasPrefix(l.test, top+"/") {
			kept = append(kept, l)
		}
	}
	k.output = kept
}

// summaryLine reports the package's closing lines ("FAIL", "FAIL\t<pkg>\t0.1s", ...),
// which the progress lines already say.
func summaryLine(l line) bool {
	if l.test != "" {
		return false
	}
	t := strings.TrimSpace(l.text)
	return t == "PASS" || t == "FAIL" || strings.HasPrefix(t, "FAIL\t") || strings.HasPrefix(t, "ok  \t")
}

// heartbeat names the packages still running, so that a long package is never silent.
func (p *progress) heartbeat() {
	p.mu.Lock()
	defer p.mu.Unlock()
	var running []string
	for _, name := range p.order {
		if k := p.pkgs[name]; k.announced && !k.done {
			running = append(running, fmt.Sprintf("%s (%s)", short(name), p.now().Sub(k.started).Round(time.Second)))
		}
	}
	if len(running) > 0 {
		fmt.Fprintf(p.out, "  ... still running: %s\n", strings.Join(running, ", "))
	}
}

func (p *progress) summary(bad bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Packages that never ended (the stream was cut: go test killed) count as failed.
	for _, name := range p.order {
		if k := p.pkgs[name]; !k.done && k.announced {
			fmt.Fprintf(p.out, "FAIL  %s  (no result)\n", short(name))
			p.failures = append(p.failures, k)
		}
	}
	sort.SliceStable(p.failures, func(i, j int) bool { return p.failures[i].name < p.failures[j].name })
	for _, k := range p.failures {
		fmt.Fprintf(p.out, "\n======== %s\n", short(k.name))
		for _, t := range k.failedTests {
			fmt.Fprintf(p.out, "---- %s\n", t)
			for _, l := range k.output {
				if l.test == t || strings.HasPrefix(l.test, t+"/") {
					fmt.Fprint(p.out, l.text)
				}
			}
		}
		// The package's own output and that of tests that never ended (a panic, a timeout).
		finished := map[string]bool{}
		for _, t := range k.failedTests {
			finished[t] = true
		}
		var rest strings.Builder
		for _, l := range k.output {
			top, _, _ := strings.Cut(l.test, "/")
			if !finished[top] && !summaryLine(l) {
				rest.WriteString(l.text)
			}
		}
		if rest.Len() > 0 {
			fmt.Fprintf(p.out, "---- package output\n%s", rest.String())
		}
	}
	status := "PASS"
	if len(p.failures) > 0 || bad {
		status = "FAIL"
	}
	fmt.Fprintf(p.out, "\n%s: %d packages ok, %d failed, %d without tests, in %s\n", status, p.okCount, len(p.failures),
		p.noTests, p.now().Sub(p.began).Round(time.Second))
	if status == "FAIL" {
		return 1
	}
	return 0
}
