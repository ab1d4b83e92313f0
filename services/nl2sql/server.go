// Package nl2sql is the natural-language-to-SQL integration service: it bridges ShopMind's
// tenants to an AskTable-style provider (services/nl2sql/asktable speaks its /v1 API):
// temporary tokens restricted to the caller's shops, chats bound to a token and a bot,
// access policies, datasource provisioning, embed URLs and a health check. Without an
// external provider it uses the built-in one (provider.go, target nl2sql-provider), which
// serves the same API. NL2SQL.md documents the service.
package nl2sql

import (
	"context"
	"embed"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	nl2sqlv1 "github.com/shopmind/shopmind/gen/go/shopmind/nl2sql/v1"
	"github.com/shopmind/shopmind/internal/apperr"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/restapi"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/services/nl2sql/asktable"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// idRe is a provider id (bot, datasource, role, chat).
var idRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Services returns the bridge (target nl2sql) and the built-in provider (target
// nl2sql-provider); a bridge finds a built-in provider of its own process by itself.
func Services() []service.Def {
	l := &local{}
	return []service.Def{Service(l), ProviderService(l)}
}

// local is what the two targets of one process share: the built-in provider's address.
type local struct {
	mu  sync.Mutex
	url string
}

func (l *local) get() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.url
}

func (l *local) set(u string) {
	l.mu.Lock()
	l.url = u
	l.mu.Unlock()
}

// Service describes the bridge (target nl2sql). l links it to a built-in provider of the
// same process (nil: none).
func Service(l *local) service.Def {
	return service.Def{
		Name:       "nl2sql",
		Migrations: postgres.Embedded("nl2sql", migrationFiles),
		Config:     service.ConfigLoader(LoadConfig),
		Register: func(ctx context.Context, s grpc.ServiceRegistrar, deps service.Deps) error {
			cfg := withDefaults(service.Settings(deps, LoadConfig), deps.Config)
			b := newBridge(cfg, deps.DB, deps.Logger, deps.Dial, l)
			warnPlaceholder(b.log, cfg, "environment")
			if err := b.settings.startWatch(ctx); err != nil {
				return err
			}
			go b.cleanup(ctx)
			go b.recorder(ctx)
			go b.provisionAtStart(ctx)
			nl2sqlv1.RegisterNl2SqlServiceServer(s, b)
			return nil
		},
		Gateway: restapi.Routes(restapi.Route(nl2sqlv1.RegisterNl2SqlServiceHandlerClient, nl2sqlv1.NewNl2SqlServiceClient)),
	}
}

// withDefaults fills the datasource connection from the platform's analytical store:
// PostgreSQL schema analytics of the platform database, or the ClickHouse of
// SHOPMIND_ANALYTICS_URL.
func withDefaults(c Config, p *config.Config) Config {
	if p == nil {
		return c
	}
	if c.JWTSecret == "" {
		c.JWTSecret = p.JWTSecret
	}
	src, engine, schema, defPort := p.DatabaseURL, "postgresql", "analytics", 5432
	if p.Analytics.URL != "" {
		src, engine, defPort = p.Analytics.URL, "clickhouse", 9000
	}
	u, err := url.Parse(src)
	if err != nil {
		return c
	}
	db := strings.TrimPrefix(u.Path, "/")
	if engine == "clickhouse" {
		if db == "" {
			db = "default"
		}
		schema = db
	}
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	fill(&c.DSEngine, engine)
	fill(&c.DSHost, u.Hostname())
	fill(&c.DSUser, u.User.Username())
	if pw, ok := u.User.Password(); ok {
		fill(&c.DSPassword, pw)
	}
	fill(&c.DSDatabase, db)
	fill(&c.DSSchema, schema)
	if c.DSPort == 0 {
		c.DSPort = dsPort(u, defPort)
	}
	return c
}

// bridge implements the Nl2SqlService.
type bridge struct {
	nl2sqlv1.UnimplementedNl2SqlServiceServer
	settings *settings
	pool     *pgxpool.Pool
	log      *slog.Logger
	dial     func(string) (grpc.ClientConnInterface, error)
	builtin  *local
	tokens   *tokenCache
	// unrecorded are policies made at the provider whose local record waits (record.go).
	unrecorded unrecorded

	// auto are the ids provisioned on first use of the built-in provider when none are
	// configured, by provider URL.
	autoMu sync.Mutex
	auto   map[string]asktable.SetupResult
	// autoBuilt: a metadata build of the provisioning (at start or in a request) that no
	// SetupDatasource has reported yet, by provider URL (metadata_rebuilt).
	autoBuilt map[string]bool
}

func newBridge(cfg Config, pool *pgxpool.Pool, log *slog.Logger, dial func(string) (grpc.ClientConnInterface, error), l *local) *bridge {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &bridge{settings: newSettings(cfg, log), pool: pool, log: log, dial: dial, builtin: l,
		tokens: newTokenCache(cfg.CacheSize), auto: map[string]asktable.SetupResult{}, autoBuilt: map[string]bool{}}
}

// upstream is the provider a request talks to, from one snapshot of the configuration.
type upstream struct {
	eff    *effective
	client *asktable.Client
	url    string // base URL ("" when none)
	kind   string // builtin or external
}

// provider resolves the provider of the configuration in effect: SHOPMIND_NL2SQL_API_URL,
// or the built-in provider (this process's, or the one at SHOPMIND_NL2SQL_PROVIDER_ADDR).
func (b *bridge) provider() (*upstream, error) {
	eff := b.settings.get()
	p := &upstream{eff: eff, kind: "external", url: eff.APIURL}
	key := eff.APIKey
	if eff.BuiltIn() {
		p.kind, key = "builtin", eff.ProviderKey()
		p.url = b.builtin.get()
		if p.url == "" {
			if host, port, err := net.SplitHostPort(eff.ProviderAddr); err == nil && port != "0" {
				if host == "" || host == "0.0.0.0" || host == "::" {
					host = "127.0.0.1"
				}
				p.url = "http://" + net.JoinHostPort(host, port)
			}
		}
	}
	p.client = &asktable.Client{BaseURL: p.url, Key: key, Timeout: eff.Timeout, Retries: eff.Retries, Backoff: eff.Backoff}
	if p.url == "" {
		return p, apperr.New(apperr.KindUnavailable, "no NL2SQL provider: set SHOPMIND_NL2SQL_API_URL (and SHOPMIND_NL2SQL_API_KEY), or run the nl2sql-provider target in this process or at SHOPMIND_NL2SQL_PROVIDER_ADDR")
	}
	if key == "" {
		return p, apperr.New(apperr.KindUnavailable, "NL2SQL provider API key not configured: set SHOPMIND_NL2SQL_API_KEY")
	}
	return p, nil
}

// configured is the provider and its ids, for the calls that need both.
func (b *bridge) configured(ctx context.Context) (*upstream, asktable.SetupResult, error) {
	p, err := b.provider()
	if err != nil {
		return nil, asktable.SetupResult{}, err
	}
	ids, err := b.ids(ctx, p)
	if err != nil {
		return nil, asktable.SetupResult{}, err
	}
	return p, ids, nil
}

// ids are the datasource, bot and role in effect: configured, or provisioned on first use
// with the built-in provider. An external provider without them answers 503 naming the
// variable to set.
func (b *bridge) ids(ctx context.Context, p *upstream) (asktable.SetupResult, error) {
	r := asktable.SetupResult{DatasourceID: p.eff.DatasourceID, BotID: p.eff.BotID, RoleID: p.eff.RoleID}
	if r.DatasourceID != "" && r.BotID != "" && r.RoleID != "" {
		return r, nil
	}
	if p.kind != "builtin" {
		var missing []string
		for _, m := range []struct{ v, name string }{{r.DatasourceID, "SHOPMIND_NL2SQL_DATASOURCE_ID"}, {r.BotID, "SHOPMIND_NL2SQL_BOT_ID"}, {r.RoleID, "SHOPMIND_NL2SQL_ROLE_ID"}} {
			if m.v == "" {
				missing = append(missing, m.name)
			}
		}
		return r, apperr.New(apperr.KindUnavailable, "NL2SQL provider not set up: set %s (`shopmind nl2sql setup` prints them)", strings.Join(missing, ", "))
	}
	// Normally provisioned at start (provisionAtStart); a request arriving before that is
	// done waits for it, and one finding it failed (the provider was down) provisions.
	b.autoMu.Lock()
	defer b.autoMu.Unlock()
	got, ok := b.auto[p.url]
	if !ok {
		var err error
		if got, err = asktable.Setup(ctx, p.client, b.setupParams(p.eff, nil)); err != nil {
			return r, err
		}
		b.auto[p.url], b.autoBuilt[p.url] = got, got.MetaRebuilt
	}
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	fill(&r.DatasourceID, got.DatasourceID)
	fill(&r.BotID, got.BotID)
	fill(&r.RoleID, got.RoleID)
	r.Tables, r.PolicyID = got.Tables, got.PolicyID
	return r, nil
}

// provisionAtStart provisions the built-in provider (datasource, metadata, policy, role,
// bot) in the background when the bridge starts and no ids are configured, so that no
// request pays for it. It retries with backoff (from 100 ms to 30 s) while the provider is
// not up yet or fails, and stops when it succeeds, when ids are configured or an external
// provider is, or when ctx ends.
func (b *bridge) provisionAtStart(ctx context.Context) {
	delay := 100 * time.Millisecond
	for attempt := 1; ctx.Err() == nil; attempt++ {
		done, err := b.provisionOnce(ctx)
		if done {
			return
		}
		if attempt >= 5 { // the provider target may start after the bridge: quiet at first
			b.log.Warn("nl2sql: provisioning the built-in provider (retrying)", "error", err, "retry_in", delay)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 30*time.Second)
	}
}

// provisionOnce runs the setup once if it is still needed; done is true when nothing is
// left to do.
func (b *bridge) provisionOnce(ctx context.Context) (done bool, err error) {
	p, err := b.provider()
	if p.kind != "builtin" || (p.eff.DatasourceID != "" && p.eff.BotID != "" && p.eff.RoleID != "") {
		return true, nil
	}
	if err != nil {
		return false, err // the built-in provider's address is not known yet, or no key
	}
	b.autoMu.Lock()
	defer b.autoMu.Unlock()
	if _, ok := b.auto[p.url]; ok {
		return true, nil
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	got, err := asktable.Setup(sctx, p.client, b.setupParams(p.eff, nil))
	if err != nil {
		return false, err
	}
	b.auto[p.url], b.autoBuilt[p.url] = got, got.MetaRebuilt
	b.log.Info("nl2sql: built-in provider provisioned", "datasource_id", got.DatasourceID, "bot_id", got.BotID, "role_id", got.RoleID, "tables", got.Tables)
	return true, nil
}

// setupParams are the datasource to provision: the request's fields over the configuration.
func (b *bridge) setupParams(eff *effective, req *nl2sqlv1.SetupDatasourceRequest) asktable.SetupParams {
	p := asktable.SetupParams{DatasourceID: eff.DatasourceID, Engine: eff.DSEngine, Schema: eff.DSSchema,
		Access:      asktable.AccessConfig{Host: eff.DSHost, Port: eff.DSPort, User: eff.DSUser, Password: eff.DSPassword, DB: eff.DSDatabase},
		MetaTimeout: eff.MetaTimeout}
	if req == nil {
		return p
	}
	over := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	switch req.GetDialect() {
	case "postgres":
		p.Engine = "postgresql"
	case "clickhouse":
		p.Engine = "clickhouse"
	}
	over(&p.Access.Host, req.GetHost())
	over(&p.Access.User, req.GetUser())
	over(&p.Access.Password, req.GetPassword())
	over(&p.Access.DB, req.GetDatabase())
	if req.GetPort() != 0 {
		p.Access.Port = int(req.GetPort())
	}
	if p.Engine == "clickhouse" && req.GetDatabase() != "" {
		p.Schema = req.GetDatabase()
	}
	p.RebuildMeta = req.GetRebuildMetadata()
	return p
}
