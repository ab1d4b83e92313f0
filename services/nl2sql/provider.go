package nl2sql

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"

	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/service"
	"github.com/shopmind/shopmind/services/nl2sql/provider"
)

// ProviderTarget is the target name of the built-in provider.
const ProviderTarget = "nl2sql-provider"

// ProviderService describes the built-in NL2SQL provider (target nl2sql-provider): an HTTP
// server at SHOPMIND_NL2SQL_PROVIDER_ADDR speaking the provider API the bridge uses. It
// registers nothing on the gRPC server. l tells a bridge of the same process its address.
func ProviderService(l *local) service.Def {
	return service.Def{
		Name:       ProviderTarget,
		Migrations: postgres.Embedded("nl2sql_provider", provider.Migrations),
		Config:     service.ConfigLoader(loadProviderSettings),
		Register: func(ctx context.Context, _ grpc.ServiceRegistrar, deps service.Deps) error {
			settings := service.Settings(deps, loadProviderSettings)
			cfg := withDefaults(settings.NL2SQL, deps.Config)
			if cfg.ProviderKey() == "" {
				return errors.New("nl2sql-provider: set SHOPMIND_NL2SQL_API_KEY or SHOPMIND_JWT_SECRET (its key derives from them)")
			}
			opts := provider.Options{Key: cfg.ProviderKey(), Pool: deps.DB, MaxRows: cfg.ProviderMaxRows, Log: deps.Logger}
			// Without the sandbox (an account that may not create its role) the provider
			// still serves everything but questions, which answer 503 with the cause.
			if exec, err := openExecutor(ctx, deps, settings.Sandbox); err != nil {
				deps.Logger.Error("nl2sql-provider: SQL sandbox unavailable, questions answer 503", "error", err)
				opts.ExecErr = err
			} else {
				opts.Exec, opts.Catalogs = exec, exec.catalog
			}
			srv := provider.New(opts)
			lis, err := net.Listen("tcp", cfg.ProviderAddr)
			if err != nil {
				return fmt.Errorf("nl2sql-provider: listen on %s (set SHOPMIND_NL2SQL_PROVIDER_ADDR to another address): %w", cfg.ProviderAddr, err)
			}
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
			go func() { _ = hs.Serve(lis) }()
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = hs.Shutdown(sctx)
			}()
			url := "http://" + lis.Addr().String()
			if l != nil {
				l.set(url)
			}
			if deps.Logger != nil {
				deps.Logger.Info("nl2sql built-in provider listening", "url", url)
			}
			return nil
		},
	}
}
