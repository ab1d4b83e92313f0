// Package tier names ShopMind's test tiers and keeps the unit tier free of the others.
//
//   - unit: `go test -short ./...` (`make test-short`): no database, no external server, no
//     platform; loopback fakes (httptest, an in-process gRPC server) are fine.
//   - contract: services/<name>/contract_test.go, one service's RPCs through the generated
//     typed clients on the gRPC server only (stack.StartServices: no gateway, no WAF).
//   - platform: stack.Start and friends, through the gateway, in tests/ (bar cmd/shopmind's
//     tests of its own commands, which check their effect on a running platform). Those files
//     build only with -tags platform (`make test` passes it): under -short they could only
//     skip, and linking their whole-platform binaries would be most of the unit tier's
//     time. internal/archtest fails naming a file of tests/ without the constraint.
//
// Every helper that needs more than the unit tier allows (pgtest, stack, warehousetest, an
// embedded etcd, the built binary) calls Needs first, so -short skips its tests in one
// place per kind of dependency.
package tier

import "testing"

// Needs skips tb under -short: it needs what (e.g. "PostgreSQL"), which the unit tier
// does not have.
func Needs(tb testing.TB, what string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("needs %s: not part of the unit tier (go test -short); run it with `make test`", what)
	}
}
