// Package etcdtest runs a single-member embedded etcd for tests (go.etcd.io/etcd/server/v3/embed).
package etcdtest

import (
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/shopmind/shopmind/internal/testutil/tier"
)

// Start starts etcd on free loopback ports, quietly, in a temporary directory; it returns a
// function that stops it (the test's cleanup calls it too) and its client URL. It skips the
// test in the unit tier.
func Start(t *testing.T) (stop func(), clientURL string) {
	t.Helper()
	tier.Needs(t, "an embedded etcd")
	ecfg := embed.NewConfig()
	ecfg.Dir = t.TempDir()
	ecfg.LogLevel = "fatal"
	cu, _ := url.Parse("http://" + FreeAddr(t))
	pu, _ := url.Parse("http://" + FreeAddr(t))
	ecfg.ListenClientUrls, ecfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	ecfg.ListenPeerUrls, ecfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	ecfg.InitialCluster = ecfg.InitialClusterFromName(ecfg.Name)
	e, err := embed.StartEtcd(ecfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	var once sync.Once
	stop = func() { once.Do(e.Close) } // Close panics when called twice
	t.Cleanup(stop)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(15 * time.Second):
		t.Fatal("embedded etcd not ready within 15s")
	}
	return stop, cu.String()
}

// FreeAddr returns a loopback address no one listens on right now.
func FreeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
