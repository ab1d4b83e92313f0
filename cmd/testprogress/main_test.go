package main

import (
	"strings"
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	const m = "github.com/shopmind/shopmind/"
	stream := strings.Join([]string{
		`{"Action":"start","Package":"` + m + `gen/x"}`,
		`{"Action":"output","Package":"` + m + `gen/x","Output":"?   \t` + m + `gen/x\t[no test files]\n"}`,
		`{"Action":"skip","Package":"` + m + `gen/x","Elapsed":0}`,
		`{"Action":"start","Package":"` + m + `a"}`,
		`{"Action":"run","Package":"` + m + `a","Test":"TestOK"}`,
		`{"Action":"output","Package":"` + m + `a","Test":"TestOK","Output":"quiet log\n"}`,
		`{"Action":"pass","Package":"` + m + `a","Test":"TestOK","Elapsed":0.1}`,
		`{"Action":"run","Package":"` + m + `a","Test":"TestBad"}`,
		`{"Action":"run","Package":"` + m + `a","Test":"TestBad/sub"}`,
		`{"Action":"output","Package":"` + m + `a","Test":"TestBad/sub","Output":"    a_test.go:9: want 1, got 2\n"}`,
		`{"Action":"fail","Package":"` + m + `a","Test":"TestBad/sub","Elapsed":0}`,
		`{"Action":"fail","Package":"` + m + `a","Test":"TestBad","Elapsed":0}`,
		`{"Action":"run","Package":"` + m + `a","Test":"TestSkip"}`,
		`{"Action":"skip","Package":"` + m + `a","Test":"TestSkip","Elapsed":0}`,
		`{"Action":"fail","Package":"` + m + `a","Elapsed":1.25}`,
		`{"ImportPath":"` + m + `b [` + m + `b.test]","Action":"build-output","Output":"b/b.go:3:1: syntax error\n"}`,
		`{"ImportPath":"` + m + `b [` + m + `b.test]","Action":"build-fail"}`,
		`{"Action":"start","Package":"` + m + `b"}`,
		`{"Action":"fail","Package":"` + m + `b","Elapsed":0,"FailedBuild":"` + m + `b [` + m + `b.test]"}`,
		`{"Action":"start","Package":"` + m + `c"}`,
		`{"Action":"run","Package":"` + m + `c","Test":"TestC"}`,
		`{"Action":"pass","Package":"` + m + `c","Test":"TestC","Elapsed":0}`,
		`{"Action":"pass","Package":"` + m + `c","Elapsed":0.5}`,
		`go: some message of the go command`,
	}, "\n")
	var out strings.Builder
	p := newProgress(&out, time.Now)
	if code := p.run(strings.NewReader(stream)); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	got := out.String()
	for _, want := range []string{
		"start a\n", "FAIL  a  1.2s  (1 passed, 1 skipped, 1 failed)\n",
		"FAIL  b  0.0s  (build failed: b [b.test])\n",
		"start c\n", "ok    c  0.5s  (1 passed)\n",
		"go: some message of the go command\n",
		"---- TestBad\n    a_test.go:9: want 1, got 2\n",
		"b/b.go:3:1: syntax error\n",
		"FAIL: 1 packages ok, 2 failed, 1 without tests",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"quiet log", "gen/x"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("output has %q:\n%s", unwanted, got)
		}
	}
}

func TestProgressPassAndHeartbeat(t *testing.T) {
	const m = "github.com/shopmind/shopmind/"
	var out strings.Builder
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgress(&out, func() time.Time { return now })
	p.handle(event{Action: "start", Package: m + "slow"})
	p.handle(event{Action: "run", Package: m + "slow", Test: "TestSlow"})
	now = now.Add(90 * time.Second)
	p.heartbeat()
	p.handle(event{Action: "pass", Package: m + "slow", Test: "TestSlow"})
	p.handle(event{Action: "pass", Package: m + "slow", Elapsed: 90})
	if code := p.run(strings.NewReader("")); code != 0 {
		t.Errorf("exit status %d, want 0:\n%s", code, out.String())
	}
	if got := out.String(); !strings.Contains(got, "still running: slow (1m30s)") || !strings.Contains(got, "PASS: 1 packages ok, 0 failed") {
		t.Errorf("output:\n%s", got)
	}
}
