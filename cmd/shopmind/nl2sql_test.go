package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/testutil/pgtest"
	"github.com/shopmind/shopmind/services/nl2sql/provider"
)

// `shopmind nl2sql setup` against the built-in provider's protocol: it prints the ids to
// configure, the same ones on a re-run; an unreachable database and a wrong key fail with
// what to fix.
func TestNL2SQLSetupCommand(t *testing.T) {
	requirePostgres(t)
	sub, _ := fs.Sub(provider.Migrations, "migrations")
	db := pgtest.New(t, postgres.Migrations{Service: "nl2sql_provider", FS: sub})
	srv := httptest.NewServer(provider.New(provider.Options{Key: "sk-setup-test", Pool: db.Pool}))
	defer srv.Close()
	run := func(env map[string]string, args ...string) (string, error) {
		vars := map[string]string{"SHOPMIND_NL2SQL_API_URL": srv.URL, "SHOPMIND_NL2SQL_API_KEY": "sk-setup-test",
			"SHOPMIND_DATABASE_URL": "postgres://postgres@127.0.0.1:5432/shopmind?sslmode=disable"}
		for k, v := range env {
			vars[k] = v
		}
		var out bytes.Buffer
		err := runNL2SQL(context.Background(), append([]string{"setup"}, args...), cmdIO{getenv: func(k string) string { return vars[k] }, stdout: &out, stderr: io.Discard})
		return out.String(), err
	}
	first, err := run(nil)
	if err != nil || !strings.Contains(first, "SHOPMIND_NL2SQL_DATASOURCE_ID=ds_") || !strings.Contains(first, "SHOPMIND_NL2SQL_BOT_ID=bot_") || !strings.Contains(first, "SHOPMIND_NL2SQL_ROLE_ID=role_") {
		t.Fatalf("setup: %v\n%s", err, first)
	}
	ids := func(out string) string { return out[strings.Index(out, "SHOPMIND_NL2SQL_DATASOURCE_ID"):] }
	again, err := run(nil, "--rebuild-metadata")
	if err != nil || ids(again) != ids(first) || !strings.Contains(again, "metadata rebuilt: true") {
		t.Fatalf("re-run: %v\n%s\nfirst:\n%s", err, again, first)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	if _, err := run(map[string]string{"SHOPMIND_NL2SQL_DS_PORT": strconv.Itoa(port)}); err == nil || !strings.Contains(err.Error(), "run the setup again") {
		t.Fatalf("unreachable database: %v", err)
	}
	if _, err := run(map[string]string{"SHOPMIND_NL2SQL_API_KEY": "sk-wrong"}); err == nil || !strings.Contains(err.Error(), "SHOPMIND_NL2SQL_API_KEY") {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := run(nil, "frobnicate"); err == nil {
		t.Fatal("an unknown flag is an error")
	}
}
