package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// importRun runs `shopmind import args` against db; it returns standard output and error.
func importRun(t *testing.T, db *pgtest.Database, args ...string) (string, string, error) {
	t.Helper()
	vars := map[string]string{"SHOPMIND_DATABASE_URL": db.URL, "SHOPMIND_LOG_LEVEL": "warn"}
	var out, errOut bytes.Buffer
	err := runImport(context.Background(), args, cmdIO{getenv: func(k string) string { return vars[k] },
		stdin: strings.NewReader(""), stdout: &out, stderr: &errOut})
	return out.String(), errOut.String(), err
}

// A tenant made with `shopmind tenant create` gets the standard metric catalog; orders
// imported with `shopmind import orders` (with a progress bar) are in its GMV and order
// count at once; the same file again changes nothing.
func TestImportOrdersCommand(t *testing.T) {
	db := tenantDB(t)
	out, err := tenantCmd(t, db, nil, "Shop-Owner-2040\n", "--code", "linen", "--name", "Linen Co")
	if err != nil || !strings.Contains(out, "standard metric catalog: 10 metrics") {
		t.Fatalf("tenant create: %q %v", out, err)
	}
	file := filepath.Join("..", "..", "services", "basic", "testdata", "imports", "shopify_orders.csv")
	out, progress, err := importRun(t, db, "orders", "--tenant", "linen", "--format", "shopify", file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "succeeded; 7 rows read, 7 stored, 0 rejected; orders 6 created") || !strings.Contains(progress, "100%") {
		t.Fatalf("output %q, progress %q", out, progress)
	}
	out, _, err = importRun(t, db, "orders", "--tenant=linen", "--quiet", file)
	if err != nil || !strings.Contains(out, "orders 0 created, 0 updated, 6 unchanged") {
		t.Fatalf("again: %q %v", out, err)
	}
	// Bad input is refused before anything runs.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"orders", file}, "--tenant is required"},
		{[]string{"orders", "--tenant=nobody", file}, `tenant "nobody" not found`},
		{[]string{"orders", "--tenant=linen", "--format=csv", file}, "--format"},
		{[]string{"goods", "--tenant=linen", file}, "want the kind"},
		{[]string{"orders", "--tenant=linen", "missing.csv"}, "no such file"},
	} {
		if _, _, err := importRun(t, db, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}

	s := stack.StartOn(t, db)
	tok := s.Login(t, "linen", "admin", "Shop-Owner-2040").Access
	r := s.Do(t, "POST", "/analysis/api/v1/anls/query/preview",
		`{"metric_names":["gmv","order_count","avg_order_value"],"start_time":"2026-09-01T00:00:00Z","end_time":"2026-11-01T00:00:00Z"}`, stack.Bearer(tok)...)
	env := testutil.DecodeEnvelope(t, "preview", r.Status, r.Body)
	var d struct {
		Columns []struct{ Name string } `json:"columns"`
		Rows    [][]any                 `json:"rows"`
	}
	if err := json.Unmarshal(env.Data, &d); err != nil || len(d.Rows) != 1 {
		t.Fatalf("preview: %s %v", r.Body, err)
	}
	got := map[string]any{}
	for i, c := range d.Columns {
		got[c.Name] = d.Rows[0][i]
	}
	// Computed by hand from the file: #1001 95.00 + #1002 30.00 + #1005 24.00.
	if got["gmv"] != 149.0 || got["order_count"] != 3.0 {
		t.Fatalf("preview %v", got)
	}
	r = s.Do(t, "GET", "/basic/api/v1/basic/orders?status=refunded", "", stack.Bearer(tok)...)
	if !strings.Contains(string(r.Body), `"order_no":"#1003"`) || !strings.Contains(string(r.Body), `"total":"1"`) {
		t.Fatalf("refunded orders: %s", r.Body)
	}
}
