//go:build platform

package reliability

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shopmind/shopmind/internal/testutil/tier"
)

// cluster is a private PostgreSQL server of one test, so it can really be stopped and
// started without touching the machine's shared server.
type cluster struct {
	bin, data string
	port      int
	runAs     string // "postgres" when the test runs as root (PostgreSQL refuses root)
}

// privateCluster initialises and starts a cluster in a temporary directory; it returns nil
// with the reason when this machine cannot run one.
func privateCluster(t *testing.T) (*cluster, string) {
	t.Helper()
	tier.Needs(t, "a private PostgreSQL cluster (initdb, pg_ctl)")
	initdbs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(initdbs) == 0 {
		return nil, "no /usr/lib/postgresql/*/bin/initdb"
	}
	sort.Strings(initdbs)
	c := &cluster{bin: filepath.Dir(initdbs[len(initdbs)-1])}
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, "running as root without a postgres user"
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		// t.TempDir's parent is private to root; the server's user must reach its directory.
		if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
			return nil, err.Error()
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err.Error()
		}
		c.runAs = "postgres"
	}
	c.data = filepath.Join(dir, "data")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if out, err := c.run("initdb", "-D", c.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return nil, fmt.Sprintf("initdb: %v: %s", err, out)
	}
	if err := c.start(); err != nil {
		return nil, err.Error()
	}
	stop := func() { _, _ = c.run("pg_ctl", "-D", c.data, "-m", "immediate", "-w", "-t", "30", "stop") }
	onEmergency(stop)
	t.Cleanup(stop)
	return c, ""
}

func (c *cluster) run(tool string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, tool), args...)
	if c.runAs != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs, "--", filepath.Join(c.bin, tool)}, args...)...)
	}
	cmd.Dir = "/"
	return cmd.CombinedOutput()
}

// start starts the server and waits until it accepts connections.
func (c *cluster) start() error {
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=60 -c shared_buffers=32MB",
		c.port, filepath.Dir(c.data))
	if out, err := c.run("pg_ctl", "-D", c.data, "-l", filepath.Join(filepath.Dir(c.data), "server.log"), "-o", opts, "-w", "-t", "30", "start"); err != nil {
		return fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	return nil
}

// stop stops the server as an operator's restart does (fast: sessions are terminated).
func (c *cluster) stop() error {
	if out, err := c.run("pg_ctl", "-D", c.data, "-m", "fast", "-w", "-t", "30", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// url is the URL of database name on the cluster.
func (c *cluster) url(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}

// createDatabase creates a database on the cluster.
func (c *cluster) createDatabase(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
}
