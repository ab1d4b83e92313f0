package app

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Module names besides the service targets.
const (
	ModuleDatabase     = "database"     // PostgreSQL pool and the selected services' migrations
	ModuleAuth         = "auth"         // token verifier and revocation list (and its listener)
	ModuleDiscovery    = "discovery"    // client connections to targets: etcd, static addresses or loopback
	ModuleGRPCServer   = "grpc-server"  // the gRPC server the selected services register on
	ModuleGRPCServe    = "grpc-serve"   // that server serving on its listener, once they have
	ModuleRegistration = "registration" // the hosted services announced in etcd (when discovery is on)
	TargetGateway      = "gateway"      // the HTTP edge
	TargetAll          = "all"
)

// module is a part of the process, built by its init function (modules.go's table): Start
// brings it up (servers serve in the background, reporting failures to the app), Stop takes
// it down. Run starts modules in dependency order and stops them in the reverse order.
type module interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// hooks is a module made of two functions, either of which may be nil.
type hooks struct {
	start func(context.Context) error
	stop  func(context.Context) error
}

func (h hooks) Start(ctx context.Context) error {
	if h.start == nil {
		return nil
	}
	return h.start(ctx)
}

func (h hooks) Stop(ctx context.Context) error {
	if h.stop == nil {
		return nil
	}
	return h.stop(ctx)
}

// moduleSpec is one row of the module table.
type moduleSpec struct {
	// deps are pulled in with the module, started before it and stopped after it.
	deps []string
	// after are started before the module and stopped after it when they run, but not pulled
	// in (the gateway after the gRPC server that its in-process calls go through).
	after []string
	init  func(*app) (module, error)
}

// moduleTable is the module map (the pattern of Loki's modules.go): a module's init
// function and what it depends on. Modules init and start one after the other in dependency
// order; the stop order, the reverse, follows: etcd registrations close first, the gateway
// drains, then the gRPC server, then the services' background work stops, then the
// connections and the revocation listener, and the pool closes last.
func moduleTable(services []string) map[string]moduleSpec {
	t := map[string]moduleSpec{
		ModuleDatabase:     {init: initDatabase},
		ModuleAuth:         {deps: []string{ModuleDatabase}, init: initAuth},
		ModuleDiscovery:    {deps: []string{ModuleAuth}, init: initDiscovery},
		ModuleGRPCServer:   {deps: []string{ModuleAuth, ModuleDiscovery}, init: initGRPCServer},
		ModuleGRPCServe:    {deps: []string{ModuleGRPCServer}, after: services, init: initGRPCServe},
		ModuleRegistration: {deps: []string{ModuleGRPCServe}, after: []string{TargetGateway}, init: initRegistration},
		TargetGateway: {deps: []string{ModuleDatabase, ModuleAuth, ModuleDiscovery}, // the revocation list lives in PostgreSQL
			after: []string{ModuleGRPCServe}, init: initGateway},
	}
	for i, s := range services {
		// Services start in the order of the list (the tenant service first: it creates the
		// demo tenant the others seed), each after the one before it when that one runs.
		spec := moduleSpec{deps: []string{ModuleDatabase, ModuleAuth, ModuleDiscovery, ModuleGRPCServer}, init: initService(s)}
		if i > 0 {
			spec.after = services[i-1 : i]
		}
		t[s] = spec
	}
	return t
}

// moduleOrder is the order in which Resolve visits the modules: among modules that do not
// depend on each other, the earlier in this list starts first.
func moduleOrder(services []string) []string {
	order := []string{ModuleDatabase, ModuleAuth, ModuleDiscovery, ModuleGRPCServer}
	order = append(order, services...)
	return append(order, ModuleGRPCServe, TargetGateway, ModuleRegistration)
}

// targetModules maps each target to the modules it asks for (their dependencies follow).
func targetModules(services []string) map[string][]string {
	t := map[string][]string{TargetGateway: {TargetGateway}, TargetAll: {TargetGateway, ModuleGRPCServe, ModuleRegistration}}
	for _, s := range services {
		t[s] = []string{s, ModuleGRPCServe, ModuleRegistration}
		t[TargetAll] = append(t[TargetAll], s)
	}
	return t
}

// Resolve expands a comma list of targets to the modules to start, in start order: every
// module after its dependencies (and after the modules it runs after, when present).
func Resolve(targets string, services []string) ([]string, error) {
	table, byTarget := moduleTable(services), targetModules(services)
	want := map[string]bool{}
	var pull func(string)
	pull = func(m string) {
		if want[m] {
			return
		}
		want[m] = true
		for _, d := range table[m].deps {
			pull(d)
		}
	}
	for _, t := range strings.Split(targets, ",") {
		mods, ok := byTarget[strings.TrimSpace(t)]
		if !ok {
			return nil, fmt.Errorf("unknown target %q (known: %s)", strings.TrimSpace(t), strings.Join(Targets(services), ", "))
		}
		for _, m := range mods {
			pull(m)
		}
	}
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string) error
	visit = func(m string) error {
		switch state[m] {
		case 1:
			return fmt.Errorf("module %s depends on itself", m)
		case 2:
			return nil
		}
		state[m] = 1
		for _, d := range append(append([]string(nil), table[m].deps...), table[m].after...) {
			if want[d] {
				if err := visit(d); err != nil {
					return err
				}
			}
		}
		state[m] = 2
		order = append(order, m)
		return nil
	}
	for _, m := range moduleOrder(services) {
		if !want[m] {
			continue
		}
		if err := visit(m); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// Targets lists the names accepted by --target.
func Targets(services []string) []string {
	out := append([]string{TargetAll, TargetGateway}, services...)
	sort.Strings(out[2:])
	return out
}
