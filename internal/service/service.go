// Package service defines what a ShopMind service contributes to the binary: its gRPC
// servers, its REST routes and event streams, its migrations and its demo data. Each
// services/<name> package exports one Def; internal/app wires them into targets.
package service

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"

	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/config"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/restapi"
)

// Deps are what a service receives when it starts.
type Deps struct {
	// Config is the platform's configuration (internal/config).
	Config *config.Config
	// Settings is the service's own configuration, what its Def.Config loaded (a pointer to
	// the service's type, which the service asserts); nil for a service without one.
	Settings any
	Logger   *slog.Logger
	// DB is the platform database, migrated; nil for services that use none.
	DB *pgxpool.Pool
	// Dial returns a client connection to another target (in-process loopback in `all`).
	Dial func(target string) (grpc.ClientConnInterface, error)
	// Auth is the process's authenticator (tokens, revocation list), shared by every service.
	Auth *authn.Authenticator
	// Permissions is the permission cache behind Auth; the tenant service, which owns the
	// data, sets its Source when it runs in this process.
	Permissions *authn.CachedPermissions
}

// Def describes a service.
type Def struct {
	// Name is the target name (tenant, system, analysis, basic, notify, chat, nl2sql, crx).
	Name string
	// Migrations are the service's schema migrations, nil when it stores nothing.
	Migrations *postgres.Migrations
	// Register builds the service's servers and registers them on the gRPC server.
	Register func(ctx context.Context, s grpc.ServiceRegistrar, deps Deps) error
	// Stop, when set, ends the service's background work when the process stops: after the
	// gRPC server drained, before the database closes (nil: the end of Register's context
	// is enough).
	Stop func(ctx context.Context) error
	// Gateway registers the service's REST routes (nil for internal-only services).
	Gateway restapi.Registration
	// Streams are the server-streaming RPCs the gateway answers as server-sent events,
	// registered after the REST routes (which they override on the same path).
	Streams []restapi.Stream
	// Topics are what clients may follow on the gateway's WebSocket channel, each served
	// by one of Streams.
	Topics []restapi.Topic
	// Uploads are the routes whose body is a file streamed to the service (restapi.Upload).
	Uploads []restapi.Upload
	// Config reads the service's own variables through getenv (each package owns its
	// configuration: variables, defaults, validation) and returns a pointer to its
	// configuration, which the service receives as Deps.Settings, with a message naming the
	// variable for each malformed value; nil when the service reads none. The composition
	// root (internal/app.LoadConfig) calls it for every service the binary knows.
	Config func(getenv func(string) string) (any, []string)
	// Seed loads demo data when SHOPMIND_DEMO_DATA is set; nil when the service has none.
	Seed func(ctx context.Context, deps Deps) error
}

// ConfigLoader adapts a package's typed loader to Def.Config (a pointer to the value).
func ConfigLoader[T any](load func(getenv func(string) string) (T, []string)) func(func(string) string) (any, []string) {
	return func(getenv func(string) string) (any, []string) {
		cfg, errs := load(getenv)
		return &cfg, errs
	}
}

// Settings returns the configuration a service received in deps, or load's defaults when it
// received none (a Deps built by hand in a test).
func Settings[T any](deps Deps, load func(getenv func(string) string) (T, []string)) T {
	if c, ok := deps.Settings.(*T); ok && c != nil {
		return *c
	}
	c, _ := load(func(string) string { return "" })
	return c
}
