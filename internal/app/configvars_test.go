package app_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/services"
)

// configDocs are the README and the documents its Configuration section links to: the
// section promises every variable is in one of them.
func configDocs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Configuration\n")
	if !ok {
		t.Fatal("README.md has no Configuration section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	docs := []string{"README.md"}
	for _, m := range regexp.MustCompile(`\]\(([^)#]+\.md)\)`).FindAllStringSubmatch(section, -1) {
		if !slices.Contains(docs, m[1]) {
			docs = append(docs, m[1])
		}
	}
	return docs
}

// readVars returns every variable the loaders read, found by loading through a getenv that
// records what it is asked, with values that take the conditional branches (production's
// demo passwords, a partner's key, the other environments' addresses). Names made from a
// value are reported as the documents write them: SHOPMIND_<ENV>_SERVICE_ADDRS,
// SHOPMIND_PARTNER_<NAME>_KEY.
func readVars(t *testing.T) []string {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]bool{}
	record := func(env map[string]string) func(string) string {
		return func(k string) string {
			mu.Lock()
			seen[k] = true
			mu.Unlock()
			return env[k]
		}
	}
	for _, env := range []map[string]string{
		nil,
		{"SHOPMIND_MODE": "production", "SHOPMIND_DEMO_TENANT": "true", "SHOPMIND_PARTNERS": "acme=https://partner.example",
			"SHOPMIND_ENVIRONMENTS": "dev,staging", "SHOPMIND_VECTOR_STORE": "qdrant"},
	} {
		_, _ = app.LoadConfig(record(env), services.All()) // errors are expected; only the names matter
	}
	envAddrs := regexp.MustCompile(`^SHOPMIND_[A-Z0-9]+_SERVICE_ADDRS$`) // SHOPMIND_DEV_SERVICE_ADDRS is read to be refused
	partnerKey := regexp.MustCompile(`^SHOPMIND_PARTNER_[A-Z0-9_]+_KEY$`)
	var out []string
	for k := range seen {
		switch {
		case envAddrs.MatchString(k):
			k = "SHOPMIND_<ENV>_SERVICE_ADDRS"
		case partnerKey.MatchString(k) && k != "SHOPMIND_PARTNER_A_KEY":
			k = "SHOPMIND_PARTNER_<NAME>_KEY"
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestEveryVariableIsDocumented fails naming each variable a loader reads that neither the
// README's configuration table nor a document it points to lists.
func TestEveryVariableIsDocumented(t *testing.T) {
	var docs strings.Builder
	paths := configDocs(t)
	for _, p := range paths {
		b, err := os.ReadFile("../../" + p)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	vars := readVars(t)
	if len(vars) < 60 {
		t.Fatalf("only %d variables recorded: %v", len(vars), vars)
	}
	for _, v := range vars {
		if !strings.Contains(docs.String(), "`"+v+"`") {
			t.Errorf("%s is read but documented in none of %s", v, strings.Join(paths, ", "))
		}
	}
}
