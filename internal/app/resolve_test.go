package app_test

import (
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/app"
)

func TestResolveTargets(t *testing.T) {
	services := []string{"tenant", "chat"}
	order, err := app.Resolve("all", services)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, m := range order {
		pos[m] = i
	}
	for _, m := range []string{"gateway", "database", "auth", "discovery", "grpc-server", "grpc-serve", "registration", "tenant", "chat"} {
		if _, ok := pos[m]; !ok {
			t.Fatalf("all lacks %s: %v", m, order)
		}
	}
	// Start order; the stop order is the reverse: the registrations close first, the gateway
	// drains before the gRPC server, the services' work stops before the pool closes.
	for _, before := range [][2]string{{"database", "auth"}, {"database", "tenant"}, {"grpc-server", "chat"},
		{"tenant", "chat"}, {"chat", "grpc-serve"}, {"grpc-serve", "gateway"}, {"gateway", "registration"}} {
		if pos[before[0]] > pos[before[1]] {
			t.Fatalf("%s after %s: %v", before[0], before[1], order)
		}
	}
	order, err = app.Resolve("gateway", services)
	if err != nil || strings.Join(order, ",") != "database,auth,discovery,gateway" {
		t.Fatalf("gateway alone: %v %v", order, err)
	}
	order, err = app.Resolve("chat", services)
	if err != nil || strings.Join(order, ",") != "database,auth,discovery,grpc-server,chat,grpc-serve,registration" {
		t.Fatalf("chat alone: %v %v", order, err)
	}
	if _, err := app.Resolve("tenant,nope", services); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown target: %v", err)
	}
	if _, err := app.Resolve("database", services); err == nil {
		t.Fatal("internal module accepted as a target")
	}
}
