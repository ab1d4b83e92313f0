package warehouse

// Cluster mode of the ClickHouse store (SHOPMIND_CLICKHOUSE_CLUSTER, or cluster=<name> in
// the analytics URL): every table T is two tables on every node of the cluster,
//
//   - T_local, ReplicatedMergeTree (ReplicatedReplacingMergeTree for the tables that are
//     ReplacingMergeTree on one server) with the same partitioning and sorting key as on
//     one server, its replicas coordinated by ZooKeeper under
//     /clickhouse/tables/{shard}/<database>/T_local;
//   - T, Distributed(cluster, database, T_local, intHash64(i_tenant_id)): what every reader
//     and writer uses, by the same name as on one server, so the semantic layer, the
//     sandbox, the chat's tools and the loaders need no change.
//
// Sharding by tenant keeps all of a tenant's rows (orders, items, shops, goods, categories,
// collected values) on one shard: a tenant's query is answered by one shard's reads, and
// joins between Distributed tables are shard-local (the cluster's profile sets
// distributed_product_mode = local) and still complete. DDL runs ON CLUSTER; mutations
// (upserts, tenant deletion) and OPTIMIZE run on one replica of each shard directly (the
// replicated table carries them to the other replica, also one that is down now, when it
// returns).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/shopmind/shopmind/internal/apperr"
)

// LocalSuffix ends the name of a cluster's shard-local tables (T_local under the
// Distributed table T). The catalog leaves them out: a read of one shard's table would be a
// partial answer.
const LocalSuffix = "_local"

// ShardingKey is the Distributed tables' sharding expression: a hash of the tenant, so a
// tenant's rows live on one shard (see the package documentation of cluster mode).
const ShardingKey = "intHash64(i_tenant_id)"

// chCluster is what the store knows of its cluster: the name and, per shard, a connection
// that fails over between the shard's replicas and one connection per replica.
type chCluster struct {
	name     string
	shards   []driver.Conn   // per shard: the replicas in order (failover)
	replicas [][]driver.Conn // per shard, per replica
	addrs    [][]string
}

// splitClusterParam removes cluster=<name> from a clickhouse:// URL (the driver would send
// unknown parameters to the server as settings) and returns the URL and the name.
func splitClusterParam(rawURL string) (string, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", err
	}
	q := u.Query()
	name := q.Get("cluster")
	if !q.Has("cluster") {
		return rawURL, "", nil
	}
	if !identRe.MatchString(name) {
		return "", "", fmt.Errorf("cluster %q is not a cluster name (lower-case letters, digits, underscores)", name)
	}
	q.Del("cluster")
	u.RawQuery = q.Encode()
	return u.String(), name, nil
}

// openCluster reads the cluster's shards and replicas from system.clusters of the node the
// store is connected to and opens connections to them.
func (s *chStore) openCluster(ctx context.Context, name string, opts clickhouse.Options) error {
	rows, err := s.conn.Query(ctx, "SELECT shard_num, host_address, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num", name)
	if err != nil {
		return fmt.Errorf("warehouse: clickhouse cluster %s: %w", name, err)
	}
	defer rows.Close()
	c := &chCluster{name: name}
	for rows.Next() {
		var shard uint32
		var host string
		var port uint16
		if err := rows.Scan(&shard, &host, &port); err != nil {
			return fmt.Errorf("warehouse: clickhouse cluster %s: %w", name, err)
		}
		for int(shard) > len(c.addrs) {
			c.addrs = append(c.addrs, nil)
		}
		c.addrs[shard-1] = append(c.addrs[shard-1], net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("warehouse: clickhouse cluster %s: %w", name, err)
	}
	if len(c.addrs) == 0 {
		return fmt.Errorf("warehouse: clickhouse cluster %s is not in system.clusters of %s (remote_servers in the server config)", name, strings.Join(opts.Addr, ","))
	}
	open := func(addrs []string) (driver.Conn, error) {
		o := opts
		o.Addr = addrs
		o.MaxOpenConns = 4
		return clickhouse.Open(&o) // dials on first use
	}
	for _, addrs := range c.addrs {
		conn, err := open(addrs)
		if err != nil {
			return err
		}
		c.shards = append(c.shards, conn)
		var reps []driver.Conn
		for _, a := range addrs {
			r, err := open([]string{a})
			if err != nil {
				return err
			}
			reps = append(reps, r)
		}
		c.replicas = append(c.replicas, reps)
	}
	s.cluster = c
	return nil
}

func (c *chCluster) close() {
	for i := range c.shards {
		c.shards[i].Close()
		for _, r := range c.replicas[i] {
			r.Close()
		}
	}
}

// replicatedEngine turns a one-server engine clause ("MergeTree() PARTITION BY ...") into
// its replicated form for table local of database db.
func replicatedEngine(engine, db, local string) string {
	name, rest, _ := strings.Cut(engine, "()")
	return fmt.Sprintf("Replicated%s('/clickhouse/tables/{shard}/%s/%s', '{replica}')%s", name, db, local, rest)
}

// createTable creates table name with columns (the DDL between the parentheses) and engine
// (the one-server engine clause): on one server the table itself, on a cluster name_local
// and the Distributed name on every node. Tables already there are left alone; on a
// cluster, a table of that name that is not Distributed (a one-server store) stops the
// start with the way out.
func (s *chStore) createTable(ctx context.Context, name, columns, engine string) error {
	if s.cluster == nil {
		err := s.conn.Exec(ctx, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n%s) ENGINE = %s", name, columns, engine))
		var ex *clickhouse.Exception
		if errors.As(err, &ex) && ex.Code == chTableAlreadyExists {
			err = nil // another replica created it between the check and the creation
		}
		if err != nil {
			return fmt.Errorf("warehouse: create %s: %w", name, err)
		}
		return nil
	}
	local := name + LocalSuffix
	engines, err := s.tableEngines(ctx, name, local)
	if err != nil {
		return err
	}
	if e, ok := engines[name]; ok && e != "Distributed" {
		return fmt.Errorf("warehouse: table %s.%s is a one-server table (engine %s), not the Distributed table of cluster %s: "+
			"move the data to a database created in cluster mode (WAREHOUSE.md, \"Moving to a cluster\")", s.database, name, e, s.cluster.name)
	}
	db, cl := chIdent(s.database), chIdent(s.cluster.name)
	if _, ok := engines[local]; !ok {
		if err := s.onCluster(ctx, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s ON CLUSTER %s (\n%s) ENGINE = %s",
			db, local, cl, columns, replicatedEngine(engine, s.database, local))); err != nil {
			return fmt.Errorf("warehouse: create %s on cluster %s: %w", local, s.cluster.name, err)
		}
	}
	if _, ok := engines[name]; !ok {
		if err := s.onCluster(ctx, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s ON CLUSTER %s AS %s.%s ENGINE = Distributed(%s, %s, %s, %s)",
			db, name, cl, db, local, cl, db, local, ShardingKey)); err != nil {
			return fmt.Errorf("warehouse: create %s on cluster %s: %w", name, s.cluster.name, err)
		}
	}
	return nil
}

// onCluster runs a distributed DDL statement; a table that exists on some node already
// (created by a start that timed out waiting for a node) is not an error.
func (s *chStore) onCluster(ctx context.Context, ddl string) error {
	err := s.conn.Exec(ctx, ddl)
	var ex *clickhouse.Exception
	if errors.As(err, &ex) && ex.Code == chTableAlreadyExists {
		return nil
	}
	return err
}

// tableEngines is the engine of each of names that exists in the store's database on the
// connected node.
func (s *chStore) tableEngines(ctx context.Context, names ...string) (map[string]string, error) {
	args := []any{s.database}
	args = append(args, anySlice(names)...)
	rows, err := s.conn.Query(ctx, "SELECT name, engine FROM system.tables WHERE database = ? AND name IN ("+placeholders(len(names))+")", args...)
	if err != nil {
		return nil, fmt.Errorf("warehouse: list tables: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var n, e string
		if err := rows.Scan(&n, &e); err != nil {
			return nil, fmt.Errorf("warehouse: list tables: %w", err)
		}
		out[n] = e
	}
	return out, rows.Err()
}

// mutateCluster runs ALTER TABLE table_local <command> on each shard (one replica; the
// other applies it from the replication log) and waits there until the mutation is done.
func (s *chStore) mutateCluster(ctx context.Context, table, command string) error {
	local := table + LocalSuffix
	for i, conn := range s.cluster.shards {
		if err := conn.Exec(ctx, fmt.Sprintf("ALTER TABLE %s.%s %s", chIdent(s.database), local, command)); err != nil {
			return s.writeError(fmt.Errorf("warehouse: alter %s on shard %d: %w", local, i+1, err))
		}
		if err := waitMutations(ctx, conn, s.database, local); err != nil {
			return s.writeError(err)
		}
	}
	return nil
}

// waitMutations polls system.mutations until table has none pending (18.16 has no
// mutations_sync).
func waitMutations(ctx context.Context, conn driver.Conn, database, table string) error {
	ctx, cancel := context.WithTimeout(ctx, mutationWait)
	defer cancel()
	for wait := 5 * time.Millisecond; ; wait = min(wait*2, 200*time.Millisecond) {
		var pending uint64
		err := conn.QueryRow(ctx, "SELECT count() FROM system.mutations WHERE database = ? AND table = ? AND is_done = 0",
			database, table).Scan(&pending)
		if err != nil {
			return fmt.Errorf("warehouse: wait for mutation of %s: %w", table, err)
		}
		if pending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("warehouse: mutation of %s not done: %w", table, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// optimizeCluster merges table_local on each shard. It does not wait for the other replica
// (replication_alter_partitions_sync = 0): 18.16's wait fails with "Unknown log entry type"
// when the merge has nothing to do.
func (s *chStore) optimizeCluster(ctx context.Context, table string) error {
	local := table + LocalSuffix
	ctx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"replication_alter_partitions_sync": 0}))
	for i, conn := range s.cluster.shards {
		if err := conn.Exec(ctx, fmt.Sprintf("OPTIMIZE TABLE %s.%s FINAL", chIdent(s.database), local)); err != nil {
			return s.writeError(fmt.Errorf("warehouse: optimize %s on shard %d: %w", local, i+1, err))
		}
	}
	return nil
}

// chWriteUnavailable are the server exceptions of a write the cluster cannot take now: the
// keeper is gone or the table went read-only without it, a shard has no live replica, the
// status of an insert is unknown.
var chWriteUnavailable = map[int32]bool{
	225: true, // NO_ZOOKEEPER
	242: true, // TABLE_IS_READ_ONLY (replicated table without its keeper session)
	279: true, // ALL_CONNECTION_TRIES_FAILED
	319: true, // UNKNOWN_STATUS_OF_INSERT
	999: true, // KEEPER_EXCEPTION
	210: true, 209: true, 202: true, 203: true, 236: true, 252: true,
}

// writeError turns a write's failure to reach the store (a server gone, a shard without a
// live replica, ZooKeeper down) into a 503 naming the store, keeping the cause for the log;
// other errors pass unchanged.
func (s *chStore) writeError(err error) error {
	var ex *clickhouse.Exception
	if (errors.As(err, &ex) && chWriteUnavailable[ex.Code]) || (ex == nil && unreachable(err)) {
		return &apperr.Error{Kind: apperr.KindUnavailable, Message: s.unavailableMessage(), Cause: err}
	}
	return err
}

// unavailableMessage names the store in a 503.
func (s *chStore) unavailableMessage() string {
	if s.cluster != nil {
		return "the analytical store (ClickHouse cluster " + s.cluster.name + ") is unavailable: a shard or its coordination is unreachable; retry shortly"
	}
	return "the analytical store is unavailable; retry shortly"
}

// isLocalTable reports a cluster's shard-local table, which the catalog leaves out.
func (s *chStore) isLocalTable(name string) bool {
	return s.cluster != nil && strings.HasSuffix(name, LocalSuffix)
}

// clusterKeys runs a key query on the local table of every live replica of every shard and
// feeds each row to scan: a value stored on one replica and not yet copied to the other is
// found all the same. A shard with no live replica is an error (503).
func (s *chStore) clusterKeys(ctx context.Context, sql string, args []any, scan func(driver.Rows) error) error {
	for i, reps := range s.cluster.replicas {
		live := 0
		var last error
		for _, r := range reps {
			rows, err := r.Query(ctx, sql, args...)
			if err != nil {
				last = err
				continue
			}
			for rows.Next() {
				if err := scan(rows); err != nil {
					rows.Close()
					return err
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				last = err
				continue
			}
			live++
		}
		if live == 0 {
			return s.writeError(fmt.Errorf("warehouse: no replica of shard %d answered: %w", i+1, last))
		}
	}
	return nil
}
