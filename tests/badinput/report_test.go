//go:build platform

package badinput

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// leaks are texts no client-facing message may contain: SQL errors, driver names, source
// locations, panics.
var leaks = []string{"SQLSTATE", "pgx", "pq:", "ERROR:", "syntax error at", "panic", "goroutine", ".go:",
	"/work/", "/root/", "runtime error", "invalid byte sequence"}

// leaked returns the first leak marker in msg, or "".
func leaked(msg string) string {
	for _, l := range leaks {
		if strings.Contains(msg, l) {
			return l
		}
	}
	return ""
}

// maxMessage is the longest error message accepted (a longer one echoes the input).
const maxMessage = 4096

// names reports whether msg names the field or, through one of words, the problem.
func names(msg, field string, words []string) bool {
	m := strings.ToLower(msg)
	if field != "" && (strings.Contains(m, strings.ToLower(field)) || strings.Contains(m, strings.ToLower(camel(field)))) {
		return true
	}
	for _, w := range words {
		if strings.Contains(m, strings.ToLower(w)) {
			return true
		}
	}
	return false
}

// example is one failing answer.
type example struct {
	op, field, request, answer string
}

type group struct {
	problem, kind string
	count         int
	ops           map[string]int
	examples      []example
}

// findings collects failures, grouped by problem and input kind.
type findings struct {
	mu     sync.Mutex
	groups map[string]*group
}

const examplesPerGroup = 3

func (f *findings) add(problem, kind, op string, ex example) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.groups == nil {
		f.groups = map[string]*group{}
	}
	key := problem + "\x00" + kind
	g := f.groups[key]
	if g == nil {
		g = &group{problem: problem, kind: kind, ops: map[string]int{}}
		f.groups[key] = g
	}
	g.count++
	g.ops[op]++
	if len(g.examples) < examplesPerGroup {
		ex.op = op
		g.examples = append(g.examples, ex)
	}
}

func (f *findings) total() int {
	n := 0
	for _, g := range f.groups {
		n += g.count
	}
	return n
}

// report writes one error per group, worst problems first.
func (f *findings) report(t *testing.T) {
	t.Helper()
	gs := make([]*group, 0, len(f.groups))
	for _, g := range f.groups {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool {
		if gs[i].problem != gs[j].problem {
			return gs[i].problem < gs[j].problem
		}
		return gs[i].kind < gs[j].kind
	})
	for _, g := range gs {
		ops := make([]string, 0, len(g.ops))
		for op := range g.ops {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		if len(ops) > 8 {
			ops = append(ops[:8], fmt.Sprintf("... %d more", len(g.ops)-8))
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s [%s]: %d answers, %d operations: %s", g.problem, g.kind, g.count, len(g.ops), strings.Join(ops, ", "))
		for _, ex := range g.examples {
			fmt.Fprintf(&b, "\n    e.g. %s (field %q)\n      request: %s\n      answer:  %s", ex.op, ex.field, ex.request, ex.answer)
		}
		t.Error(b.String())
	}
	if len(gs) > 0 {
		t.Logf("%d failing answers in %d groups", f.total(), len(gs))
	}
}

// log writes the groups as notes, not failures.
func (f *findings) log(t *testing.T, title string) {
	t.Helper()
	if len(f.groups) == 0 {
		return
	}
	var lines []string
	for _, g := range f.groups {
		ops := make([]string, 0, len(g.ops))
		for op := range g.ops {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		fields := map[string]bool{}
		for _, ex := range g.examples {
			fields[ex.field] = true
		}
		lines = append(lines, fmt.Sprintf("%s [%s]: %d operations: %s", g.problem, g.kind, len(ops), strings.Join(ops, ", ")))
	}
	sort.Strings(lines)
	t.Logf("%s:\n    %s", title, strings.Join(lines, "\n    "))
}

// clip shortens text for a report and makes its bytes printable.
func clip(s string, n int) string {
	if len(s) > n {
		s = s[:n] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	q := fmt.Sprintf("%q", s)
	return q[1 : len(q)-1]
}

// tally counts answers by input kind and outcome, for the verbose log.
type tally struct {
	mu   sync.Mutex
	m    map[string]map[string]int
	took map[string]time.Duration
}

func (t *tally) add(kind, outcome string, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m, t.took = map[string]map[string]int{}, map[string]time.Duration{}
	}
	t.took[kind] += took
	if t.m[kind] == nil {
		t.m[kind] = map[string]int{}
	}
	t.m[kind][outcome]++
}

// log writes one line per input kind: its outcomes and their counts (with -v).
func (t *tally) log(tb testing.TB) {
	if !testing.Verbose() {
		return
	}
	kinds := make([]string, 0, len(t.m))
	for k := range t.m {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	b.WriteString("outcomes by input kind (status/code or gRPC code: count; total time):")
	for _, k := range kinds {
		outs := make([]string, 0, len(t.m[k]))
		for o, n := range t.m[k] {
			outs = append(outs, fmt.Sprintf("%s:%d", o, n))
		}
		sort.Strings(outs)
		fmt.Fprintf(&b, "\n    %-45s %s; %v", k, strings.Join(outs, " "), t.took[k].Round(time.Millisecond))
	}
	tb.Log(b.String())
}
