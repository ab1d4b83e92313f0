package sqlsandbox_test

import (
	"bufio"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/analytics/catalog"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/sqlsandbox"
)

// escapeCase is one line of testdata/escape.tsv.
type escapeCase struct {
	line    int
	dialect string // sqlsandbox.Postgres or sqlsandbox.ClickHouse
	refuse  string // the reason's text; "" for a neutral case
	sql     string
}

func loadEscapes(t testing.TB) []escapeCase {
	t.Helper()
	f, err := os.Open("testdata/escape.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []escapeCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("escape.tsv:%d: want dialect, expectation and statement separated by tabs", n)
		}
		c := escapeCase{line: n, sql: strings.ReplaceAll(parts[2], `\n`, "\n")}
		switch {
		case parts[1] == "neutral":
		case strings.HasPrefix(parts[1], "refuse:"):
			c.refuse = strings.TrimPrefix(parts[1], "refuse:")
		default:
			t.Fatalf("escape.tsv:%d: unknown expectation %q", n, parts[1])
		}
		dialects := map[string][]string{"pg": {sqlsandbox.Postgres}, "ch": {sqlsandbox.ClickHouse},
			"both": {sqlsandbox.Postgres, sqlsandbox.ClickHouse}}[parts[0]]
		if dialects == nil {
			t.Fatalf("escape.tsv:%d: unknown dialect %q", n, parts[0])
		}
		for _, d := range dialects {
			c.dialect = d
			out = append(out, c)
		}
	}
	return out
}

func loadLegit(t testing.TB, dialect string) []string {
	t.Helper()
	b, err := os.ReadFile("testdata/legit_" + dialect + ".sql")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "--") {
			out = append(out, line)
		}
	}
	return out
}

// TestEscapeCorpusRefused: every "refuse" case of the escape corpus is refused before it
// reaches a database, with a 400 naming the reason.
func TestEscapeCorpusRefused(t *testing.T) {
	cases := loadEscapes(t)
	if len(cases) < 150 {
		t.Fatalf("the escape corpus has %d cases, want at least 150", len(cases))
	}
	for _, c := range cases {
		if c.refuse == "" {
			continue
		}
		rw, err := sqlsandbox.Rewrite(c.dialect, catalog.Base(), sqlsandbox.Scope{TenantID: 1}, c.sql, 100)
		if err == nil {
			t.Errorf("escape.tsv:%d (%s): %q was accepted as %q", c.line, c.dialect, c.sql, rw.SQL)
			continue
		}
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Kind != apperr.KindInvalid {
			t.Errorf("escape.tsv:%d (%s): want a 400, got %v", c.line, c.dialect, err)
			continue
		}
		if !slices.ContainsFunc(strings.Split(c.refuse, "|"), func(want string) bool { return strings.Contains(ae.Message, want) }) {
			t.Errorf("escape.tsv:%d (%s): %q: reason %q does not mention %q", c.line, c.dialect, c.sql, ae.Message, c.refuse)
		}
	}
}

// TestLegitCorpusAccepted: every legitimate query passes the checks, reads only catalog
// tables, and each table reference carries the tenant filter (the DB tests compare rows).
func TestLegitCorpusAccepted(t *testing.T) {
	for _, dialect := range []string{sqlsandbox.Postgres, sqlsandbox.ClickHouse} {
		qs := loadLegit(t, dialect)
		if len(qs) < 100 {
			t.Fatalf("%s: the legitimate corpus has %d queries, want at least 100", dialect, len(qs))
		}
		tenant := "i_tenant_id = $1"
		if dialect == sqlsandbox.ClickHouse {
			tenant = "`i_tenant_id` = 42"
		}
		for _, q := range qs {
			rw, err := sqlsandbox.Rewrite(dialect, catalog.Base(), sqlsandbox.Scope{TenantID: 42}, q, 100)
			if err != nil {
				t.Errorf("%s: %q refused: %v", dialect, q, err)
				continue
			}
			if refs := strings.Count(strings.ToLower(q), "basic_"); len(rw.Tables) > 0 && strings.Count(rw.SQL, tenant) == 0 || refs > 0 && len(rw.Tables) == 0 {
				t.Errorf("%s: %q: rewritten without the tenant filter: %s", dialect, q, rw.SQL)
			}
		}
	}
}
