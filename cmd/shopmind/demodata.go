package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shopmind/shopmind/internal/analytics/demodata"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/app"
	"github.com/shopmind/shopmind/internal/logging"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/services"
)

// runDemoData is `shopmind demo-data`: it generates a tenant's shops, goods and orders into
// the analytical store (internal/analytics/demodata).
func runDemoData(args []string) error {
	fs := flag.NewFlagSet("demo-data", flag.ContinueOnError)
	orders := fs.Int("orders", 100_000, "orders to generate")
	tenant := fs.String("tenant", "demo", "tenant code (tenant.tenants.code)")
	seed := fs.Int64("seed", 1, "random seed: the same seed gives the same data")
	analyticsURL := fs.String("analytics-url", "", "analytical store, overriding SHOPMIND_ANALYTICS_URL (clickhouse://host:9000/db)")
	days := fs.Int("days", demodata.DefaultDays, "days of orders before --now")
	nowFlag := fs.String("now", "", "end of the period, YYYY-MM-DD (default: today, UTC)")
	batch := fs.Int("batch", 0, "orders per bulk insert (default 10000 on PostgreSQL, 50000 on ClickHouse)")
	replace := fs.Bool("replace", false, "delete the tenant's analytical data first")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *orders < 0 || *days <= 0 || *batch < 0 {
		return errors.New("demo-data: --orders and --batch must not be negative, --days must be positive")
	}
	var now time.Time
	if *nowFlag != "" {
		var err error
		if now, err = time.Parse("2006-01-02", *nowFlag); err != nil {
			return fmt.Errorf("demo-data: --now: %w", err)
		}
	}
	cfg, err := app.LoadEnv(services.All())
	if err != nil {
		return err
	}
	storeURL := cfg.Analytics.URL
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "analytics-url" {
			storeURL = *analyticsURL
		}
	})
	logger := logging.New(os.Stderr, cfg.LogLevel)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	pool, err := postgres.Open(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns)
	if err != nil {
		return fmt.Errorf("demo-data: platform database: %w", err)
	}
	defer pool.Close()
	var tenantID int64
	err = pool.QueryRow(ctx, "SELECT id FROM tenant.tenants WHERE code = $1", *tenant).Scan(&tenantID)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000"): // no tenant table or schema
		return errors.New("demo-data: the platform database has no tenants yet: run `shopmind serve` once in development (the tenant service creates tenant demo on first start), or create a tenant with `shopmind tenant create`")
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("demo-data: tenant %q not found (development creates tenant demo on the first `shopmind serve`; otherwise `shopmind tenant create`)", *tenant)
	case err != nil:
		return fmt.Errorf("demo-data: look up tenant %q: %w", *tenant, err)
	}

	store, err := warehouse.Open(ctx, storeURL, pool, logger)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.EnsureSchema(ctx); err != nil {
		return err
	}
	existing, err := demodata.ExistingOrders(ctx, store, tenantID)
	if err != nil {
		return fmt.Errorf("demo-data: count existing orders: %w", err)
	}
	if existing > 0 {
		if !*replace {
			return fmt.Errorf("demo-data: tenant %q already has %d orders in the analytical store; pass --replace to delete its data first", *tenant, existing)
		}
		fmt.Fprintf(os.Stderr, "deleting tenant %q's analytical data (%d orders)\n", *tenant, existing)
		if err := store.Writer().DeleteTenant(ctx, tenantID); err != nil {
			return err
		}
	}
	if *batch == 0 && store.Dialect() == warehouse.DialectClickHouse {
		*batch = 50_000 // ClickHouse prefers fewer, larger inserts (one part each)
	}
	stats, err := demodata.Generate(ctx, store.Writer(), demodata.Options{TenantID: tenantID, Orders: *orders, Seed: *seed,
		Now: now, Days: *days, BatchSize: *batch, Progress: os.Stderr})
	if err != nil {
		return fmt.Errorf("demo-data: %w", err)
	}
	fmt.Printf("tenant %s (id %d), %s store: %d shops, %d categories, %d goods, %d orders, %d order lines, GMV %.2f; %s (%.0f orders/s)\n",
		*tenant, tenantID, store.Dialect(), stats.Shops, stats.Categories, stats.Goods, stats.Orders, stats.Items, stats.GMV,
		stats.Elapsed.Round(100*time.Millisecond), stats.OrdersPerSecond())
	return nil
}

// demoDataUsage is the usage line of demo-data.
var demoDataUsage = strings.TrimSpace(`
  shopmind demo-data [--orders=N] [--tenant=CODE] [--seed=S] [--analytics-url=URL] [--replace]
                                      generate shops, goods and orders for a tenant (default demo)
                                      into the analytical store; run ` + "`shopmind serve`" + ` once first`)
