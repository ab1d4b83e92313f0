//go:build platform

// Package chcluster tests the analytical store's cluster mode against the local 2x2 cluster
// of scripts/clickhouse-cluster.sh (`make test-ch-cluster`): the migrations on an empty
// database and over a one-server store, moving a one-server store's data to the cluster,
// and the faults: one replica down, a whole shard down, ZooKeeper down. The fault tests stop
// and start the cluster's processes through the script, so the tier runs this package on
// its own, after the others. Without SHOPMIND_TEST_CLICKHOUSE_CLUSTER the tests skip.
package chcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/analytics/warehouse/warehousetest"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/sqlsandbox"
)

// nodes are the cluster's replicas (scripts/clickhouse-cluster.sh).
var nodes = map[string]string{"s1r1": "127.0.0.1:9301", "s1r2": "127.0.0.1:9302", "s2r1": "127.0.0.1:9303", "s2r2": "127.0.0.1:9304"}

func needCluster(t *testing.T) string {
	t.Helper()
	c := warehousetest.ClickHouseCluster()
	if c == "" {
		t.Skip("SHOPMIND_TEST_CLICKHOUSE_CLUSTER is not set (make test-ch-cluster)")
	}
	return c
}

// script runs scripts/clickhouse-cluster.sh with args.
func script(t *testing.T, args ...string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	out, err := exec.Command(filepath.Join(filepath.Dir(file), "..", "..", "scripts", "clickhouse-cluster.sh"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("clickhouse-cluster.sh %v: %v\n%s", args, err, out)
	}
	if args[0] == "start-node" || args[0] == "start-zk" {
		// Back means writable: every replicated table of the node has its ZooKeeper session.
		for n, addr := range nodes {
			if args[0] == "start-node" && n != args[1] {
				continue
			}
			for i := 0; i < 120; i++ {
				if onNode(t, addr, "SELECT toString(count()) FROM system.replicas WHERE is_readonly OR is_session_expired") == "0" {
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
	}
}

// onNode runs a query on one node and returns the first column of the first row.
func onNode(t *testing.T, addr, sql string) string {
	t.Helper()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, DialTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s on %s: %v", sql, addr, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatalf("%s on %s: %v", sql, addr, err)
		}
		out = append(out, v)
	}
	return strings.Join(out, ",")
}

func dbName(db *warehousetest.DB) string {
	u := db.URL[strings.LastIndex(db.URL, "/")+1:]
	name, _, _ := strings.Cut(u, "?")
	return name
}

func loadDemo(t *testing.T, db *warehousetest.DB, tenant int64, orders int) demodata.Stats {
	t.Helper()
	stats, err := demodata.Generate(context.Background(), db.Store.Writer(), demodata.Options{TenantID: tenant, Orders: orders, Seed: 1,
		Now: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatalf("demo data: %v", err)
	}
	return stats
}

func gmv(ctx context.Context, db *warehousetest.DB, tenant int64) (float64, error) {
	res, err := db.Store.Query(ctx, "SELECT sum(paid_amount) FROM basic_orders WHERE i_tenant_id = ?", []any{tenant}, warehouse.QueryOptions{Timeout: 20 * time.Second})
	if err != nil {
		return 0, err
	}
	return res.Rows[0][0].(float64), nil
}

// TestMigrations: every table is a Distributed table over a ReplicatedMergeTree local
// table on every node, and opening and migrating again (as every replica of the service
// does at start) changes nothing.
func TestMigrations(t *testing.T) {
	needCluster(t)
	db := warehousetest.ClickHouse(t)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		s, err := warehouse.Open(ctx, db.URL, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.EnsureSchema(ctx); err != nil {
			t.Fatalf("schema again: %v", err)
		}
		if err := s.Collector().EnsureCollected(ctx); err != nil {
			t.Fatalf("collected table again: %v", err)
		}
		s.Close()
	}
	name := dbName(db)
	for node, addr := range nodes {
		got := onNode(t, addr, fmt.Sprintf("SELECT concat(name, ':', engine) FROM system.tables WHERE database = '%s' ORDER BY name", name))
		for _, table := range []string{"basic_categories", "basic_goods", "basic_order_items", "basic_orders", "basic_shops", "diy_crx_metrics"} {
			local := "ReplicatedMergeTree"
			if table != "basic_orders" && table != "basic_order_items" {
				local = "ReplicatedReplacingMergeTree"
			}
			for _, want := range []string{table + ":Distributed", table + "_local:" + local} {
				if !strings.Contains(","+got+",", ","+want+",") {
					t.Errorf("%s: tables %s lack %s", node, got, want)
				}
			}
		}
	}
	// The catalog shows the Distributed tables only.
	cat, err := db.Store.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range cat.Tables {
		if strings.HasSuffix(tb.Name, warehouse.LocalSuffix) {
			t.Errorf("catalog lists the shard-local table %s", tb.Name)
		}
	}
	if cat.Table(warehouse.TableCollected) == nil {
		t.Error("catalog lacks diy_crx_metrics")
	}
}

// TestOneServerStoreIsRefusedAndMoved: cluster mode over a database holding one-server
// tables stops with the way out, and the documented move (INSERT ... SELECT FROM remote())
// copies a one-server store into the cluster with the same totals.
func TestOneServerStoreIsRefusedAndMoved(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	// A one-server table where the cluster's Distributed table would be.
	db := warehousetest.ClickHouse(t)
	if err := db.Exec(ctx, "RENAME TABLE basic_orders TO basic_orders_dist"); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(ctx, "CREATE TABLE basic_orders AS basic_orders_local ENGINE = MergeTree() ORDER BY i_tenant_id"); err != nil {
		t.Fatal(err)
	}
	s, err := warehouse.Open(ctx, db.URL, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	err = s.EnsureSchema(ctx)
	s.Close()
	if err == nil || !strings.Contains(err.Error(), "one-server table") || !strings.Contains(err.Error(), "Moving to a cluster") {
		t.Fatalf("cluster mode over a one-server table: %v", err)
	}

	// The move: a one-server store on the single server of scripts/clickhouse.sh ...
	single := os.Getenv("SHOPMIND_TEST_CLICKHOUSE_SINGLE_URL")
	if single == "" {
		single = warehousetest.DefaultClickHouseURL
	}
	srcName := "shopmind_move_" + strings.TrimPrefix(dbName(db), "shopmind_test_")
	admin, err := clickhouse.ParseDSN(single)
	if err != nil {
		t.Fatal(err)
	}
	adminConn, err := clickhouse.Open(admin)
	if err == nil {
		err = adminConn.Ping(ctx)
	}
	if err != nil {
		t.Skipf("the single server (%s) is not running: %v", single, err)
	}
	defer adminConn.Close()
	t.Cleanup(func() { _ = adminConn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+srcName) })
	src, err := warehouse.Open(ctx, strings.Replace(single, "/default", "/"+srcName, 1), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.EnsureSchema(ctx); err != nil {
		t.Fatal(err)
	}
	srcDB := &warehousetest.DB{Store: src}
	stats := loadDemo(t, srcDB, 7, 2000)
	// ... copied into a cluster-mode database, table by table (WAREHOUSE.md).
	dst := warehousetest.ClickHouse(t)
	host := strings.SplitN(strings.TrimPrefix(single, "clickhouse://"), "/", 2)[0]
	for _, table := range []string{"basic_shops", "basic_categories", "basic_goods", "basic_orders", "basic_order_items"} {
		if err := dst.Exec(ctx, fmt.Sprintf("INSERT INTO %s SELECT * FROM remote('%s', %s, %s)", table, host, srcName, table)); err != nil {
			t.Fatalf("copy %s: %v", table, err)
		}
	}
	for _, st := range []warehouse.Store{src, dst.Store} {
		res, err := st.Query(ctx, "SELECT count(), sum(paid_amount) FROM basic_orders WHERE i_tenant_id = 7", nil, warehouse.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		srcRes, err := src.Query(ctx, "SELECT count(), sum(paid_amount) FROM basic_orders WHERE i_tenant_id = 7", nil, warehouse.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows[0][0] != int64(stats.Orders) || math.Abs(res.Rows[0][1].(float64)-srcRes.Rows[0][1].(float64)) > 1e-6 {
			t.Errorf("after the move: %v, want %d orders and %v", res.Rows[0], stats.Orders, srcRes.Rows[0][1])
		}
	}
}

// TestReplicaDownUnderLoad: a replica of a shard is killed while previews (GMV queries) and
// crx batches run: every answered total is the right one, every accepted batch is stored,
// once, and the cluster answers throughout from the other replica.
func TestReplicaDownUnderLoad(t *testing.T) {
	needCluster(t)
	db := warehousetest.ClickHouse(t)
	ctx := context.Background()
	if err := db.Store.Collector().EnsureCollected(ctx); err != nil {
		t.Fatal(err)
	}
	const tenant = 11
	loadDemo(t, db, tenant, 3000)
	want, err := gmv(ctx, db, tenant)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for n := range nodes {
			script(t, "start-node", n)
		}
	})

	var wrong, answered, refused atomic.Int64
	var mu sync.Mutex
	accepted := map[int]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() { // previews
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := gmv(ctx, db, tenant)
				switch {
				case err != nil:
					refused.Add(1)
				case math.Abs(got-want) > 1e-6*math.Abs(want):
					wrong.Add(1)
					t.Errorf("a wrong total under the fault: %v, want %v", got, want)
				default:
					answered.Add(1)
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // crx batches, each value once, every tenant in turn (both shards)
		defer wg.Done()
		for b := 0; ; b++ {
			select {
			case <-stop:
				return
			default:
			}
			dims, key := warehouse.CanonicalDims(nil)
			now := time.Now().UTC().Truncate(time.Second)
			rows := []warehouse.CollectedValue{{TenantID: int64(100 + b%4), StatTime: time.Date(2026, 11, 1, 0, 0, b, 0, time.UTC),
				ShopID: 1, Platform: "tmall", MetricKey: "uv", Value: float64(b), Dims: dims, DimsKey: key,
				CollectedAt: now, ReceivedAt: now, BatchID: fmt.Sprint("b", b)}}
			if _, err := db.Store.Collector().InsertCollected(ctx, rows); err == nil {
				mu.Lock()
				accepted[b] = true
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	time.Sleep(time.Second)
	script(t, "stop-node", "s1r1") // the first replica of shard 1, first in every list
	time.Sleep(3 * time.Second)
	script(t, "stop-node", "s2r2")
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	if answered.Load() == 0 {
		t.Fatalf("no preview answered with a replica of each shard down (%d refused)", refused.Load())
	}
	t.Logf("previews answered %d, refused %d, wrong %d; crx batches accepted %d", answered.Load(), refused.Load(), wrong.Load(), len(accepted))
	// Every accepted batch is stored once, read with one replica per shard down ...
	check := func(when string) {
		res, err := db.Store.Query(ctx, "SELECT toInt64(value), count() FROM diy_crx_metrics GROUP BY value", nil, warehouse.QueryOptions{MaxRows: 100000})
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		stored := map[int]int64{}
		for _, r := range res.Rows {
			stored[int(r[0].(int64))] = r[1].(int64)
		}
		for b := range accepted {
			if stored[b] != 1 {
				t.Errorf("%s: accepted batch %d stored %d times", when, b, stored[b])
			}
		}
	}
	check("replicas down")
	// ... and with every replica back (they catch up from the replication log).
	script(t, "start-node", "s1r1")
	script(t, "start-node", "s2r2")
	check("replicas back")
}

// TestShardDown: with both replicas of a shard down, a query answers 503 naming the store,
// not a partial sum; the answers are right again once the shard is back.
func TestShardDown(t *testing.T) {
	cluster := needCluster(t)
	db := warehousetest.ClickHouse(t)
	ctx := context.Background()
	loadDemo(t, db, 21, 500)
	loadDemo(t, db, 22, 500)
	want, err := gmv(ctx, db, 21)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { script(t, "start-node", "s2r1"); script(t, "start-node", "s2r2") })
	script(t, "stop-node", "s2r1")
	script(t, "stop-node", "s2r2")
	for _, tenant := range []int64{21, 22} {
		got, err := gmv(ctx, db, tenant)
		var ae *apperr.Error
		if !errors.As(err, &ae) || ae.Kind != apperr.KindUnavailable || !strings.Contains(ae.Message, "ClickHouse cluster "+cluster) {
			t.Errorf("tenant %d with shard 2 down: %v, %v; want 503 naming the cluster", tenant, got, err)
		}
	}
	// Writes to the shard say so too.
	err = db.Store.Writer().Shops(ctx, []warehouse.Shop{{TenantID: 21, ShopID: 99, ShopName: "x", Platform: "jd"}, {TenantID: 22, ShopID: 99, ShopName: "x", Platform: "jd"}})
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.KindUnavailable {
		t.Errorf("a write with shard 2 down: %v; want 503", err)
	}
	script(t, "start-node", "s2r1")
	script(t, "start-node", "s2r2")
	var got float64
	for i := 0; i < 50; i++ {
		if got, err = gmv(ctx, db, 21); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil || math.Abs(got-want) > 1e-6*math.Abs(want) {
		t.Errorf("shard back: %v %v, want %v", got, err, want)
	}
}

// TestZooKeeperDown: without ZooKeeper reads go on and writes answer 503; after it returns
// writes are taken again.
func TestZooKeeperDown(t *testing.T) {
	needCluster(t)
	db := warehousetest.ClickHouse(t)
	ctx := context.Background()
	loadDemo(t, db, 31, 500)
	want, err := gmv(ctx, db, 31)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { script(t, "start-zk") })
	script(t, "stop-zk")
	if got, err := gmv(ctx, db, 31); err != nil || math.Abs(got-want) > 1e-6*math.Abs(want) {
		t.Errorf("read without ZooKeeper: %v %v, want %v", got, err, want)
	}
	shop := []warehouse.Shop{{TenantID: 31, ShopID: 77, ShopName: "after", Platform: "jd"}}
	// The replicated tables turn read-only when their ZooKeeper session ends (10 s).
	var werr error
	for i := 0; i < 60; i++ {
		if werr = db.Store.Writer().Shops(ctx, shop); werr != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	var ae *apperr.Error
	if !errors.As(werr, &ae) || ae.Kind != apperr.KindUnavailable {
		t.Errorf("a write without ZooKeeper: %v; want 503", werr)
	}
	script(t, "start-zk")
	for i := 0; i < 120; i++ {
		if werr = db.Store.Writer().Shops(ctx, shop); werr == nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if werr != nil {
		t.Errorf("a write after ZooKeeper returned: %v", werr)
	}
}

// TestSandboxOnDistributedTables: the sandbox's allowlist is the catalog, which holds the
// Distributed tables and not the shard-local ones; a statement naming a local table, another
// database or a table function that reaches other servers is refused before it runs, and
// what runs reads only the caller's tenant through the Distributed tables.
func TestSandboxOnDistributedTables(t *testing.T) {
	needCluster(t)
	db := warehousetest.ClickHouse(t)
	ctx := context.Background()
	if err := db.Store.Collector().EnsureCollected(ctx); err != nil {
		t.Fatal(err)
	}
	loadDemo(t, db, 41, 300)
	loadDemo(t, db, 42, 300)
	cat, err := db.Store.Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scope := sqlsandbox.Scope{TenantID: 41}
	for _, sql := range []string{
		"SELECT count() FROM basic_orders_local",
		"SELECT count() FROM diy_crx_metrics_local",
		"SELECT count() FROM " + dbName(db) + ".basic_orders_local",
		"SELECT count() FROM remote('127.0.0.1:9303', " + dbName(db) + ", basic_orders_local)",
		"SELECT count() FROM cluster('shopmind', " + dbName(db) + ", basic_orders_local)",
		"SELECT count() FROM basic_orders GLOBAL JOIN basic_shops USING shop_id",
		"SELECT count() FROM basic_orders WHERE shop_id GLOBAL IN (SELECT shop_id FROM basic_shops)",
	} {
		if _, err := sqlsandbox.Rewrite(warehouse.DialectClickHouse, cat, scope, sql, 100); err == nil {
			t.Errorf("the sandbox let through %s", sql)
		}
	}
	// A join written as users write it: rewritten to tenant-filtered subqueries, which an
	// 18.16 cluster answers, with the tenant's own count only.
	rw, err := sqlsandbox.Rewrite(warehouse.DialectClickHouse, cat, scope,
		"SELECT count(*) AS n FROM basic_orders o JOIN basic_shops s ON s.shop_id = o.shop_id WHERE o.i_tenant_id IN (41, 42)", 100)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Store.Query(ctx, rw.SQL, nil, warehouse.QueryOptions{Untrusted: &warehouse.Untrusted{MaxScanRows: 1_000_000}})
	if err != nil {
		t.Fatalf("%s: %v", rw.SQL, err)
	}
	if res.Rows[0][0] != int64(300) {
		t.Errorf("the tenant's join counted %v orders, want its own 300", res.Rows[0][0])
	}
	// The scan cap holds on Distributed tables (each shard enforces it on its reads).
	_, err = db.Store.Query(ctx, rw.SQL, nil, warehouse.QueryOptions{Untrusted: &warehouse.Untrusted{MaxScanRows: 10}})
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.KindRule {
		t.Errorf("scan cap of 10 rows on the cluster: %v; want 422", err)
	}
}
