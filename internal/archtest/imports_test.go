package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// roots are the composition roots, which may import anything; every binary under cmd/ is one
// too.
var roots = []string{"internal/app", "services", "internal/testutil/stack"}

// layers are the top-level folders of the module; a package elsewhere fails the test.
var layers = []string{"cmd", "gateway", "gen", "internal", "services", "tests"}

// corazaPrefix is the module path prefix of the WAF engine and its rule set.
const corazaPrefix = "github.com/corazawaf/"

// graph is the import graph of the module's packages and everything they link.
type graph struct {
	module string
	// own are the module's packages (full import paths), sorted.
	own []string
	// imports are the non-test imports of every package of the build, the module's and the
	// others (the standard library, other modules).
	imports map[string][]string
	// testImports are the imports of the module's packages' test files.
	testImports map[string][]string
}

// kind is a package's layer.
type kind int

const (
	kindForeign  kind = iota // not of the module
	kindRoot                 // a composition root
	kindService              // services/<name>/...
	kindGateway              // gateway/...
	kindInternal             // internal/... other than the roots
	kindGen                  // gen/...
	kindTests                // tests/...: test-only packages
	kindUnplaced             // of the module, outside every layer
)

// place returns the layer of p, its path inside the module and, for a service, its name.
func (g graph) place(p string) (k kind, rel, service string) {
	if p == g.module {
		return kindUnplaced, ".", ""
	}
	rel, ok := strings.CutPrefix(p, g.module+"/")
	if !ok {
		return kindForeign, p, ""
	}
	top, rest, _ := strings.Cut(rel, "/")
	switch {
	case slices.Contains(roots, rel) || top == "cmd":
		return kindRoot, rel, ""
	case top == "services":
		name, _, _ := strings.Cut(rest, "/")
		return kindService, rel, name
	case top == "gateway":
		return kindGateway, rel, ""
	case top == "internal":
		return kindInternal, rel, ""
	case top == "gen":
		return kindGen, rel, ""
	case top == "tests":
		return kindTests, rel, ""
	}
	return kindUnplaced, rel, ""
}

// The rules, as the failures name them.
const (
	ruleServiceToService = "a service imports internal/ and gen/, never another service"
	ruleServiceToGateway = "a service never imports the gateway"
	ruleServiceToRoot    = "a service never imports a composition root"
	ruleGatewayToService = "the gateway imports internal/ and gen/, never a service or a composition root"
	ruleGatewayContract  = "the gateway imports no service's contract: what it serves comes from the backends' descriptions (internal/restapi)"
	ruleInternal         = "internal/ is shared below the services and the gateway: it imports internal/ and gen/ only"
	ruleGen              = "gen/ is generated from the contract and imports gen/ only"
	ruleServiceLinks     = "a service links neither the gateway nor Coraza"
	ruleServiceTests     = "a service's tests reach other services over gRPC (through internal/testutil/stack), never by importing them"
	ruleUnplaced         = "every package belongs to a layer: " // + layers
)

// violations checks the graph against the rules, one line per offending import:
// "<pkg> imports <pkg>: <rule>", paths relative to the module.
func violations(g graph) []string {
	var out []string
	report := func(from, to, rule string) {
		_, f, _ := g.place(from)
		_, t, _ := g.place(to)
		out = append(out, f+" imports "+t+": "+rule)
	}
	reportTest := func(from, to, rule string) {
		_, f, _ := g.place(from)
		_, t, _ := g.place(to)
		out = append(out, f+" [test] imports "+t+": "+rule)
	}
	for _, p := range g.own {
		k, rel, svc := g.place(p)
		if k == kindUnplaced {
			out = append(out, rel+": "+ruleUnplaced+strings.Join(layers, ", "))
			continue
		}
		for _, q := range g.imports[p] {
			qk, qrel, qsvc := g.place(q)
			switch k {
			case kindService:
				switch {
				case qk == kindRoot:
					report(p, q, ruleServiceToRoot)
				case qk == kindService && qsvc != svc:
					report(p, q, ruleServiceToService)
				case qk == kindGateway:
					report(p, q, ruleServiceToGateway)
				}
			case kindGateway:
				switch {
				case qk == kindService || qk == kindRoot:
					report(p, q, ruleGatewayToService)
				case qk == kindGen && isServiceContract(qrel):
					report(p, q, ruleGatewayContract)
				}
			case kindInternal:
				if qk == kindService || qk == kindGateway || qk == kindRoot {
					report(p, q, ruleInternal)
				}
			case kindGen:
				if qk != kindGen && qk != kindForeign {
					report(p, q, ruleGen)
				}
			}
		}
		if k == kindService {
			if chain := g.pathTo(p, func(q string) bool {
				qk, _, _ := g.place(q)
				return qk == kindGateway || strings.HasPrefix(q, corazaPrefix)
			}); chain != nil && !(len(chain) == 2 && !strings.HasPrefix(chain[1], corazaPrefix)) { // a direct gateway import is reported above
				rels := make([]string, len(chain))
				for i, c := range chain {
					_, rels[i], _ = g.place(c)
				}
				report(p, chain[1], ruleServiceLinks+" ("+strings.Join(rels, " -> ")+")")
			}
			for _, q := range g.testImports[p] {
				if qk, _, qsvc := g.place(q); qk == kindService && qsvc != svc {
					reportTest(p, q, ruleServiceTests)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// isServiceContract reports whether a gen/ package is a service's contract (anything but
// the shared common messages).
func isServiceContract(rel string) bool {
	return strings.HasPrefix(rel, "gen/go/shopmind/") && !strings.HasPrefix(rel, "gen/go/shopmind/common/")
}

// pathTo returns the shortest import chain from p to a package that match accepts, nil when
// p links none.
func (g graph) pathTo(p string, match func(string) bool) []string {
	parent := map[string]string{p: ""}
	queue := []string{p}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, q := range g.imports[cur] {
			if _, seen := parent[q]; seen {
				continue
			}
			parent[q] = cur
			if match(q) {
				chain := []string{q}
				for c := cur; c != ""; c = parent[c] {
					chain = append(chain, c)
				}
				slices.Reverse(chain)
				return chain
			}
			queue = append(queue, q)
		}
	}
	return nil
}

// loadGraph reads the module's import graph with `go list`.
func loadGraph(t *testing.T) graph {
	t.Helper()
	goCmd := func(args ...string) []byte {
		cmd := exec.Command("go", args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return bytes.TrimSpace(out)
	}
	dir := filepath.Dir(string(goCmd("env", "GOMOD")))
	g := graph{module: string(goCmd("list", "-m")), imports: map[string][]string{}, testImports: map[string][]string{}}
	// The platform tag brings in tests/ (internal/testutil/tier), whose imports obey the rules too.
	cmd := exec.Command("go", "list", "-tags", "platform", "-deps", "-json=ImportPath,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		g.imports[p.ImportPath] = p.Imports
		if k, _, _ := g.place(p.ImportPath); k != kindForeign {
			g.own = append(g.own, p.ImportPath)
			g.testImports[p.ImportPath] = append(p.TestImports, p.XTestImports...)
		}
	}
	slices.Sort(g.own)
	return g
}

// TestImportGraph holds the module to the rules (doc.go).
func TestImportGraph(t *testing.T) {
	g := loadGraph(t)
	for _, r := range roots {
		if !slices.Contains(g.own, g.module+"/"+r) {
			t.Errorf("composition root %s not found: update roots", r)
		}
	}
	if len(g.own) < 20 || g.imports[g.module+"/cmd/shopmind"] == nil {
		t.Fatalf("go list found %d packages of %s: not the module", len(g.own), g.module)
	}
	for _, v := range violations(g) {
		t.Error(v)
	}
}

// The rules name the offending import, and the chain when a service links what it must not.
func TestRulesNameTheOffendingImport(t *testing.T) {
	const m = "example.com/shop"
	g := graph{module: m, imports: map[string][]string{
		m + "/services/crx":           {m + "/internal/service", m + "/gen/go/shopmind/crx/v1"},
		m + "/internal/service":       {m + "/gateway", "context"},
		m + "/gateway":                {m + "/gen/go/shopmind/chat/v1", m + "/gen/go/shopmind/common/v1", corazaPrefix + "coraza/v3"},
		m + "/services/basic":         {m + "/services/analysis/warehouse", m + "/services/basic/partners", m + "/internal/waf"},
		m + "/services/basic/x":       {m + "/services"},
		m + "/internal/waf":           {corazaPrefix + "coraza/v3"},
		m + "/services":               {m + "/services/crx", m + "/services/basic"},
		m + "/internal/app":           {m + "/gateway", m + "/services"},
		m + "/gen/go/shopmind/crx/v1": {m + "/internal/apperr"},
		m + "/tools/x":                nil,
	}, testImports: map[string][]string{
		m + "/services/basic": {m + "/internal/testutil/stack", m + "/services/analysis/demodata"},
		m + "/gateway":        {m + "/services/chat"},
	}}
	for p := range g.imports {
		if k, _, _ := g.place(p); k != kindForeign {
			g.own = append(g.own, p)
		}
	}
	slices.Sort(g.own)
	want := []string{
		"gateway imports gen/go/shopmind/chat/v1: " + ruleGatewayContract,
		"gen/go/shopmind/crx/v1 imports internal/apperr: " + ruleGen,
		"internal/service imports gateway: " + ruleInternal,
		"services/basic [test] imports services/analysis/demodata: " + ruleServiceTests,
		"services/basic imports internal/waf: " + ruleServiceLinks + " (services/basic -> internal/waf -> " + corazaPrefix + "coraza/v3)",
		"services/basic imports services/analysis/warehouse: " + ruleServiceToService,
		"services/basic/x imports services: " + ruleServiceLinks + " (services/basic/x -> services -> services/crx -> internal/service -> gateway)",
		"services/basic/x imports services: " + ruleServiceToRoot,
		"services/crx imports internal/service: " + ruleServiceLinks + " (services/crx -> internal/service -> gateway)",
		"tools/x: " + ruleUnplaced + strings.Join(layers, ", "),
	}
	got := violations(g)
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
