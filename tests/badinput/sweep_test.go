//go:build platform

// Package badinput is the bad-input sweep: hostile requests generated from the OpenAPI
// document for every REST operation (WAF on, WAF off, WAF off with loopback gRPC between
// the gateway and the services) and from the descriptors for every gRPC method. No answer
// may be a 500 (gRPC: Internal, Unknown, DataLoss), every answer is an envelope (a status)
// with a message naming the problem, and no message leaks internals.
//
//	go test -tags platform ./tests/badinput/ -run TestBadInputSweep -v
//	go test -tags platform ./tests/badinput/ -run 'TestBadInputSweep/rest-waf-on'
package badinput

import (
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

func TestBadInputSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("the sweep runs the whole platform")
	}
	doc, ops := loadSpec(t)
	g := &generator{doc: doc, bindings: httpBindings()}
	var cases []restCase
	for _, op := range ops {
		if _, ok := g.bindings[op.Method+" "+op.Path]; !ok {
			t.Errorf("%s: no RPC with this google.api.http binding (baseline body from the OpenAPI schema)", op.name())
		}
		cases = append(cases, g.cases(op)...)
	}
	t.Logf("%d operations, %d REST cases per mode", len(ops), len(cases))

	modes := []struct {
		name  string
		opts  []stack.Option
		cases []restCase
	}{
		// The WAF inspects every argument of a body: 900 KiB values and 50,000-element arrays
		// cost it seconds each, so under it each operation gets one of each kind.
		{"rest-waf-on", nil, sample(cases, 1)},
		{"rest-waf-off", []stack.Option{func(c *app.Config) { c.WAF.Enabled = false }}, cases},
		{"rest-waf-off-loopback", []stack.Option{func(c *app.Config) { c.WAF.Enabled, c.InProcessCalls = false, false }}, cases},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if len(m.cases) < len(cases) {
				t.Logf("%d of %d cases (one huge value of each kind per operation)", len(m.cases), len(cases))
			}
			opts := append([]stack.Option{demoData}, m.opts...)
			st := stack.Start(t, opts...)
			sweepREST(t, st, m.cases)
		})
	}
	t.Run("grpc", func(t *testing.T) {
		st := stack.Start(t, demoData)
		sweepGRPC(t, st)
	})
}

// sample keeps at most n cases of each expensive kind (huge values, big arrays) per operation.
func sample(cases []restCase, n int) []restCase {
	seen := map[string]int{}
	var out []restCase
	for _, c := range cases {
		if strings.Contains(c.kind, "huge-") || strings.Contains(c.kind, "big-") {
			key := c.op.name() + " " + c.kind
			if seen[key]++; seen[key] > n {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// demoData seeds the demo tenant, so that requests reach rows and not only empty tables.
func demoData(c *app.Config) { c.DemoData = true }
