// Package basic is the basic data service: the tenant's shops, goods categories, goods
// (with SKUs) and link-analysis templates, the orders listing, the 17 goods-management
// endpoints, and goods sync from the platform and SKU sync from partner A.
//
// # Sources of truth
//
//   - Shops, categories, goods, SKUs and templates live in PostgreSQL schema basic (this
//     package's migrations). Every shop, category and goods change is queued in the same
//     transaction (statement triggers fill basic.warehouse_outbox) and, once the request's
//     transaction has committed, pushed to the analytical store's basic_shops,
//     basic_categories and basic_goods with the warehouse Writer's upserts by the
//     process's pusher; the request waits for it up to SHOPMIND_WAREHOUSE_PUSH_WAIT
//     (holding no connection), so metrics by category or staff normally see it at once,
//     and past that answers success with X-Shopmind-Sync: pending. A push that fails is
//     logged and stays queued; a background loop retries it every
//     SHOPMIND_WAREHOUSE_RETRY_INTERVAL (the request still succeeds: its change is
//     committed and durable). See outbox.go.
//   - Orders live only in the analytical store (basic_orders, basic_order_items): the
//     orders listing queries it with SQL generated for its dialect (store_orders.go), so the
//     orders listed are the orders metrics count.
//
// # Cross-schema reads
//
// Staff members are tenant users: staff ids are checked, and staff names read, with
// read-only SQL on tenant.users of the caller's tenant; template metric ids are checked
// against analysis.metrics of the caller's tenant. Both schemas live in the same platform
// database; this service never writes them.
package basic

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	basicv1 "github.com/shopmind/shopmind/gen/go/shopmind/basic/v1"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/notifyclient"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/restapi"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/services/basic/partners"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Service describes the basic service to the binary.
func Service() service.Def {
	st := &registration{}
	return service.Def{
		Name:       "basic",
		Migrations: postgres.Embedded("basic", migrationFiles),
		Config:     service.ConfigLoader(LoadConfig),
		Register:   st.register,
		Gateway: restapi.Routes(restapi.Route(basicv1.RegisterBasicDataServiceHandlerClient, basicv1.NewBasicDataServiceClient),
			restapi.Route(basicv1.RegisterGoodsServiceHandlerClient, basicv1.NewGoodsServiceClient),
			restapi.Route(basicv1.RegisterImportServiceHandlerClient, basicv1.NewImportServiceClient), registerUpload),
		Streams: []restapi.Stream{importTopic().Stream},
		Topics:  []restapi.Topic{importTopic()},
		Uploads: []restapi.Upload{{Method: "POST", Path: importUploadPath}},
		Seed:    st.seed,
	}
}

// registration is what Register builds and Seed uses.
type registration struct {
	handlers *handlerDeps
}

// handlerDeps is what every handler of the service shares.
type handlerDeps struct {
	pool     *pgxpool.Pool
	store    *store
	wh       warehouse.Store
	outbox   *outbox
	log      *slog.Logger
	cfg      Config
	platform *partners.Platform // nil: SHOPMIND_PLATFORM_URL unset
	// queryTimeout bounds each analytical query of the orders listing.
	queryTimeout time.Duration
	partnerA     *partners.PartnerA // nil: SHOPMIND_PARTNER_A_URL unset
	notify       *notifyclient.Publisher
}

func (st *registration) register(ctx context.Context, s grpc.ServiceRegistrar, deps service.Deps) error {
	wh, err := warehouse.Open(ctx, deps.Config.Analytics.URL, deps.DB, deps.Logger)
	if err != nil {
		return fmt.Errorf("analytical store: %w", err)
	}
	// Idempotent: the analysis service does the same; this keeps the basic target usable
	// on its own.
	if err := wh.EnsureSchema(ctx); err != nil {
		return fmt.Errorf("analytical store schema: %w", err)
	}
	cfg := service.Settings(deps, LoadConfig)
	c := &handlerDeps{pool: deps.DB, store: &store{pool: deps.DB}, wh: wh, log: deps.Logger, cfg: cfg,
		queryTimeout: deps.Config.Analytics.QueryTimeout, notify: notifyclient.New(deps.Dial, deps.Logger)}
	c.outbox = newOutbox(ctx, deps.DB, wh, deps.Logger, cfg.WarehousePushWait)
	if cfg.PlatformURL != "" {
		c.platform = partners.NewPlatform(partners.Config{BaseURL: cfg.PlatformURL, APIKey: cfg.PlatformKey,
			Timeout: cfg.UpstreamTimeout, MaxRetries: retries(cfg.UpstreamRetries)})
	}
	if cfg.PartnerAURL != "" {
		c.partnerA = partners.NewPartnerA(partners.Config{BaseURL: cfg.PartnerAURL, APIKey: cfg.PartnerAKey,
			Timeout: cfg.UpstreamTimeout, MaxRetries: retries(cfg.UpstreamRetries)})
	}
	st.handlers = c
	if err := c.adoptAll(ctx); err != nil {
		return fmt.Errorf("adopt basic data of the analytical store: %w", err)
	}
	go c.outbox.run(ctx, cfg.WarehouseRetryInterval)
	basicv1.RegisterBasicDataServiceServer(s, &dataServer{c: c})
	basicv1.RegisterGoodsServiceServer(s, &goodsServer{c: c})
	basicv1.RegisterShopDirectoryServiceServer(s, &shopDirServer{c: c})
	basicv1.RegisterImportServiceServer(s, &importServer{c: c, im: &Importer{pool: deps.DB, outbox: c.outbox, cfg: cfg, log: deps.Logger}})
	return nil
}

// retries maps SHOPMIND_SYNC_RETRIES (0: none) to partners.Config.MaxRetries (0: the
// default, negative: none).
func retries(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
