package app

import (
	"fmt"
	"sort"
	"strings"
)

// Module names besides the service targets.
const (
	ModuleDatabase   = "database"    // PostgreSQL pool and the selected services' migrations
	ModuleGRPCServer = "grpc-server" // the gRPC listener hosting the selected services
	TargetGateway    = "gateway"     // the HTTP edge
	TargetAll        = "all"
)

// dependencies is the module map (the pattern of Loki's modules.go): a target pulls in what
// it depends on, transitively, and modules start in dependency order.
func dependencies(services []string) map[string][]string {
	deps := map[string][]string{
		ModuleDatabase:   nil,
		ModuleGRPCServer: nil,
		TargetGateway:    {ModuleDatabase}, // the revocation list lives in PostgreSQL
		TargetAll:        {TargetGateway},
	}
	for _, s := range services {
		deps[s] = []string{ModuleDatabase, ModuleGRPCServer}
		deps[TargetAll] = append(deps[TargetAll], s)
	}
	return deps
}

// Resolve expands a comma list of targets to the modules to start, dependencies first.
func Resolve(targets string, services []string) ([]string, error) {
	deps := dependencies(services)
	var order []string
	seen := map[string]bool{}
	var visit func(string)
	visit = func(m string) {
		if seen[m] {
			return
		}
		seen[m] = true
		for _, d := range deps[m] {
			visit(d)
		}
		order = append(order, m)
	}
	for _, t := range strings.Split(targets, ",") {
		t = strings.TrimSpace(t)
		if _, ok := deps[t]; !ok || t == ModuleDatabase || t == ModuleGRPCServer {
			return nil, fmt.Errorf("unknown target %q (known: %s)", t, strings.Join(Targets(services), ", "))
		}
		visit(t)
	}
	return order, nil
}

// Targets lists the names accepted by --target.
func Targets(services []string) []string {
	out := append([]string{TargetAll, TargetGateway}, services...)
	sort.Strings(out[2:])
	return out
}
