package nl2sql

import (
	"context"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shopmind/shopmind/internal/discovery"
	"github.com/shopmind/shopmind/internal/testutil"
	"github.com/shopmind/shopmind/internal/testutil/etcdtest"
	"github.com/shopmind/shopmind/internal/testutil/tier"
)

// startEtcdServer runs Debian's etcd-server (/usr/bin/etcd) on free loopback ports until
// the test ends and returns its client URL; the test is skipped when it is not installed.
func startEtcdServer(t *testing.T) string {
	t.Helper()
	tier.Needs(t, "Debian's etcd-server")
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd-server is not installed (apt-get install etcd-server)")
	}
	client, peer := "http://"+etcdtest.FreeAddr(t), "http://"+etcdtest.FreeAddr(t)
	cmd := exec.Command(bin, "--name", "t", "--data-dir", t.TempDir(), "--log-level", "error",
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "t="+peer)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return client
}

// The override in etcd applies without a restart, a refused value keeps the configuration
// in effect, and deleting the key returns to the environment; tested with Debian's
// etcd-server.
func TestOverrideWatchedInEtcd(t *testing.T) {
	url := startEtcdServer(t)
	ecfg := discovery.Config{Endpoints: []string{url}, Env: "nl2sqltest", DialTimeout: 5 * time.Second}
	cli, err := discovery.NewClient(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	key := OverrideKey(ecfg)
	if key != "shopmind/nl2sqltest/config/nl2sql" {
		t.Fatalf("key %s", key)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	put := func(v string) {
		t.Helper()
		testutil.Eventually(t, 20*time.Second, "etcd accepts a write", func() bool {
			pctx, c := context.WithTimeout(ctx, 2*time.Second)
			defer c()
			_, err := cli.Put(pctx, key, v)
			return err == nil
		})
	}
	// An override present before the service starts applies at start.
	put(`{"bot_id":"bot_from_etcd"}`)
	s := newSettings(Config{APIURL: "https://env.example.com", APIKey: "env-key", BotID: "bot_env", TokenTTL: time.Hour, Etcd: ecfg}, slog.New(slog.DiscardHandler))
	if err := s.startWatch(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, "the override present at start", func() bool { return s.get().BotID == "bot_from_etcd" && s.get().source == "etcd" })

	put(`{"api_url":"https://etcd.example.com","api_key":"etcd-key","token_ttl":"15m"}`)
	testutil.Eventually(t, 20*time.Second, "a changed override", func() bool {
		e := s.get()
		return e.APIURL == "https://etcd.example.com" && e.APIKey == "etcd-key" && e.TokenTTL == 15*time.Minute && e.BotID == "bot_env"
	})

	put(`{"api_url":"not a url"}`) // refused: the previous override stays
	put(`{"role_id":"role_after"}`)
	testutil.Eventually(t, 20*time.Second, "the next valid override", func() bool { return s.get().RoleID == "role_after" })
	if s.get().APIURL != "https://env.example.com" {
		t.Fatalf("fields left out keep the environment's value: %+v", s.get())
	}

	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	defer dcancel()
	if _, err := cli.Delete(dctx, key, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, "the environment after the override is deleted", func() bool {
		e := s.get()
		return e.source == "env" && e.RoleID == "" && e.BotID == "bot_env" && strings.HasPrefix(e.APIURL, "https://env.")
	})
}
