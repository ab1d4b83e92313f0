// Command benchstack measures the whole ShopMind stack against two hand-written peers
// (`make bench-stack`).
//
// It starts ShopMind (bin/shopmind serve, demo data, the WAF on, the rate limit raised) and
// two peers (this binary with the argument "peer": net/http + golang-jwt + pgx, the default
// pool, see peer.go): the mirrored one runs the SQL ShopMind's stores run, the lean one
// (-lean, lean.go) the plainest SQL a new user would write. All run on one database; it logs
// in once, checks that all three answer the same JSON for each endpoint, then loads each
// endpoint with wrk from another process, the servers in turn (the order rotating per
// round), and prints the ratio of throughput and of p50/p99 latency of ShopMind to each peer
// per endpoint (medians over the rounds).
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shopmind/shopmind/internal/authn"
	_ "github.com/shopmind/shopmind/internal/contract/linked" // the access rules of every service
)

// endpoints are the measured requests: a name and the path both servers answer.
var endpoints = []struct{ Name, Path string }{
	{"auth/info", "/tenant/api/v1/tenant/auth/info"},
	{"goods list", "/basic/api/v1/basic/goods?page_size=10"},
	{"metric list", "/analysis/api/v1/analytics/metrics"},
}

const jwtSecret = "benchstack-secret-0123456789-abcdefghij"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "peer" {
		runPeer(os.Args[2:])
		return
	}
	shopmind := flag.String("shopmind", "bin/shopmind", "the ShopMind binary")
	dbURL := flag.String("database", "postgres://postgres@127.0.0.1:5432/shopmind_benchstack?sslmode=disable", "database both servers use (created when missing)")
	rounds := flag.Int("rounds", 3, "rounds; each loads every endpoint on both servers once")
	duration := flag.Duration("duration", 5*time.Second, "length of one load")
	conns := flag.Int("connections", 32, "wrk connections")
	threads := flag.Int("threads", 1, "wrk threads")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *shopmind, *dbURL, *rounds, *duration, *conns, *threads); err != nil {
		fmt.Fprintln(os.Stderr, "benchstack:", err)
		os.Exit(1)
	}
}

func runPeer(args []string) {
	fs := flag.NewFlagSet("peer", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:18180", "listen address")
	dbURL := fs.String("database", "", "database URL")
	audience := fs.String("audience", "dev", "the tokens' audience (ShopMind's environment)")
	lean := fs.Bool("lean", false, "the lean peer (lean.go) instead of the mirrored one")
	_ = fs.Parse(args)
	var codes []string
	for c := range authn.Permissions() {
		codes = append(codes, c)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := servePeer(ctx, *addr, *dbURL, []byte(os.Getenv("SHOPMIND_JWT_SECRET")), *audience, codes, *lean); err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func ensureDatabase(ctx context.Context, dbURL string) error {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	name := cfg.Database
	cfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil || exists {
		return err
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// start runs a server process, its output in a log file, and waits until url answers 200.
func start(ctx context.Context, name, logPath, url string, env []string, bin string, args ...string) (*exec.Cmd, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = append(os.Environ(), env...), logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return cmd, nil
			}
		}
		select {
		case <-ctx.Done():
			return cmd, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return cmd, fmt.Errorf("%s did not become ready in 60 s (log: %s)", name, logPath)
}

func stopProcess(cmd *exec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
}

func run(ctx context.Context, shopmindBin, dbURL string, rounds int, duration time.Duration, conns, threads int) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return errors.New("wrk is not installed (apt-get install wrk)")
	}
	if err := ensureDatabase(ctx, dbURL); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logDir, err := os.MkdirTemp("", "benchstack-")
	if err != nil {
		return err
	}
	smAddr, peerAddr, leanAddr := freeAddr(), freeAddr(), freeAddr()
	sm, err := start(ctx, "ShopMind", logDir+"/shopmind.log", "http://"+smAddr+"/readyz",
		[]string{"SHOPMIND_DATABASE_URL=" + dbURL, "SHOPMIND_HTTP_ADDR=" + smAddr, "SHOPMIND_GRPC_ADDR=" + freeAddr(),
			"SHOPMIND_DEMO_DATA=true", "SHOPMIND_JWT_SECRET=" + jwtSecret, "SHOPMIND_RATE_LIMIT_RPS=1000000",
			"SHOPMIND_RATE_LIMIT_BURST=1000000"}, shopmindBin, "serve")
	defer stopProcess(sm)
	if err != nil {
		return err
	}
	token, audience, err := login("http://" + smAddr)
	if err != nil {
		return err
	}
	peer, err := start(ctx, "peer", logDir+"/peer.log", "http://"+peerAddr+"/healthz",
		[]string{"SHOPMIND_JWT_SECRET=" + jwtSecret}, self, "peer", "-addr", peerAddr, "-database", dbURL, "-audience", audience)
	defer stopProcess(peer)
	if err != nil {
		return err
	}
	lean, err := start(ctx, "lean peer", logDir+"/lean.log", "http://"+leanAddr+"/healthz",
		[]string{"SHOPMIND_JWT_SECRET=" + jwtSecret}, self, "peer", "-lean", "-addr", leanAddr, "-database", dbURL, "-audience", audience)
	defer stopProcess(lean)
	if err != nil {
		return err
	}
	for _, e := range endpoints {
		for _, other := range []string{peerAddr, leanAddr} {
			if err := sameAnswer("http://"+smAddr+e.Path, "http://"+other+e.Path, token); err != nil {
				return fmt.Errorf("%s: %w", e.Name, err)
			}
		}
	}
	fmt.Printf("ShopMind %s, the mirrored peer %s and the lean peer %s answer the same JSON; wrk -t%d -c%d -d%s, %d rounds in turn (logs in %s)\n",
		smAddr, peerAddr, leanAddr, threads, conns, duration, rounds, logDir)
	addrs := map[string]string{"shopmind": smAddr, "peer": peerAddr, "lean": leanAddr}
	results := map[string]map[string][]load{}
	for r := 0; r < rounds; r++ {
		for _, e := range endpoints {
			order := []string{"shopmind", "peer", "lean"}
			for i := 0; i < r%len(order); i++ { // rotate: each server goes first in turn
				order = append(order[1:], order[0])
			}
			for _, target := range order {
				addr := addrs[target]
				l, err := runWrk(ctx, "http://"+addr+e.Path, token, duration, conns, threads)
				if err != nil {
					return fmt.Errorf("%s on %s: %w", e.Name, target, err)
				}
				if results[e.Name] == nil {
					results[e.Name] = map[string][]load{}
				}
				results[e.Name][target] = append(results[e.Name][target], l)
				fmt.Printf("  round %d %-12s %-9s %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  errors %d\n",
					r+1, e.Name, target, l.RPS, l.P50, l.P99, l.Errors)
			}
		}
	}
	fmt.Println()
	fmt.Println("| endpoint | peer | ShopMind req/s | peer req/s | throughput ratio | p50 ShopMind / peer | p99 ShopMind / peer |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, e := range endpoints {
		s := median(results[e.Name]["shopmind"])
		for _, other := range []string{"peer", "lean"} {
			p := median(results[e.Name][other])
			name := map[string]string{"peer": "mirrored", "lean": "lean"}[other]
			fmt.Printf("| %s | %s | %.0f | %.0f | %.0f%% | %.2f / %.2f ms (%.2fx) | %.2f / %.2f ms (%.2fx) |\n", e.Name, name, s.RPS, p.RPS,
				100*s.RPS/p.RPS, s.P50, p.P50, s.P50/p.P50, s.P99, p.P99, s.P99/p.P99)
		}
	}
	return nil
}

// login signs in as the demo administrator and returns the access token and its audience.
func login(base string) (string, string, error) {
	resp, err := http.Post(base+"/tenant/api/v1/tenant/auth/login", "application/json",
		strings.NewReader(`{"tenant_code":"demo","username":"admin","password":"admin123"}`))
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	var env struct {
		Data struct {
			AccessToken string `json:"access_token"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || env.Data.AccessToken == "" {
		return "", "", fmt.Errorf("login: status %d, %v", resp.StatusCode, err)
	}
	parts := strings.Split(env.Data.AccessToken, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", "", err
	}
	var claims struct {
		Aud any `json:"aud"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", "", err
	}
	aud := fmt.Sprint(claims.Aud)
	if list, ok := claims.Aud.([]any); ok && len(list) == 1 {
		aud = fmt.Sprint(list[0])
	}
	return env.Data.AccessToken, aud, nil
}

func get(url, token string) (any, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: status %d: %s", url, resp.StatusCode, bytes.TrimSpace(body))
	}
	var v any
	return v, json.Unmarshal(body, &v)
}

// sameAnswer fails unless both servers answer the same JSON value.
func sameAnswer(a, b, token string) error {
	va, err := get(a, token)
	if err != nil {
		return err
	}
	vb, err := get(b, token)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(va, vb) {
		ja, _ := json.Marshal(va)
		jb, _ := json.Marshal(vb)
		return fmt.Errorf("the answers differ:\nShopMind: %.600s\npeer:     %.600s", ja, jb)
	}
	return nil
}
