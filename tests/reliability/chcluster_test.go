//go:build platform

package reliability

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/testutil/stack"
)

// TestClickHouseClusterZooKeeperOutage (make test-ch-cluster): with the analytical store on
// the ClickHouse cluster and its ZooKeeper stopped, basic's goods writes are taken (the
// outbox keeps their push), previews still answer (reads need no ZooKeeper), and once
// ZooKeeper is back the outbox catches up: the store holds every write, nothing lost.
func TestClickHouseClusterZooKeeperOutage(t *testing.T) {
	if warehousetest.ClickHouseCluster() == "" {
		t.Skip("SHOPMIND_TEST_CLICKHOUSE_CLUSTER is not set (make test-ch-cluster)")
	}
	deadline(t, 3*time.Minute)
	db := warehousetest.ClickHouse(t)
	st := stack.Start(t, smallPool, retryFast, func(c *app.Config) { c.Analytics.URL = db.URL })
	ch := openClickHouse(t, db)
	c := newClient(st.BaseURL)
	tok, _ := login(t, c, "admin", stack.AdminPassword)
	tenant := stack.DemoTenant(t, st.DB)
	shop := addShop(t, st, tenant, "ZK", "zk")
	if gmv := c.do("POST", "/api/v1/analytics/metrics", `{"name":"gmv","display_name":"GMV","group":"Sales","type":"order","config":{"order":{"order_field":"paid_amount","time_basis":"ordered_at"}}}`, tok); !gmv.ok() {
		t.Fatalf("create metric: %s", gmv)
	}
	create := func(i int) answer {
		return c.do("POST", "/basic/api/v1/basic/goods", fmt.Sprintf(`{"goods":{"shop_id":%d,"name":"ZK %d","item_no":"ZK-%d"}}`, shop, i, i), tok)
	}
	expectAll(t, "before the outage: 4 goods creates", burst(4, create))
	catchUp(t, st.DB.Pool, ch, tenant, 10*time.Second)

	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "clickhouse-cluster.sh")
	run := func(arg string) {
		if out, err := exec.Command(script, arg).CombinedOutput(); err != nil {
			t.Fatalf("clickhouse-cluster.sh %s: %v\n%s", arg, err, out)
		}
	}
	t.Cleanup(func() { run("start-zk") })
	run("stop-zk")
	// The replicated tables turn read-only when their ZooKeeper session ends (10 s).
	time.Sleep(12 * time.Second)
	writes := burst(6, func(i int) answer { return create(10 + i) })
	expectAll(t, "ZooKeeper down: 6 goods creates", writes)
	rng := fmt.Sprintf(`"start_time":"%s","end_time":"%s"`, time.Now().AddDate(0, -1, 0).UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339))
	if a := c.do("POST", "/api/v1/anls/query/preview", `{"metric_names":["gmv"],`+rng+`}`, tok); !a.ok() {
		t.Errorf("a preview with ZooKeeper down: %s", a)
	}
	run("start-zk")
	took := catchUp(t, st.DB.Pool, ch, tenant, 60*time.Second)
	t.Logf("the outbox caught up %s after ZooKeeper came back", took.Round(time.Millisecond))
}
