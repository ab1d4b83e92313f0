// Package crx is the browser extension's backend: the extension configuration an
// administrator sets per tenant, batches of collected metric values (stored in the analytical
// store's diy_crx_metrics, so metrics and chat can use them), ad-hoc page data, the
// extension's error log and the version check. See CRX.md.
//
// Shops named in uploads are checked against the caller's tenant by gRPC to the basic
// service (ShopDirectoryService.ResolveShops, the caller's token forwarded); upload summaries
// and failures are notified through internal/notifyclient.
package crx

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	crxv1 "github.com/shopmind/shopmind/gen/go/shopmind/crx/v1"
	"github.com/shopmind/shopmind/internal/analytics/warehouse"
	"github.com/shopmind/shopmind/internal/authn"
	"github.com/shopmind/shopmind/internal/crxbundle"
	"github.com/shopmind/shopmind/internal/notifyclient"
	"github.com/shopmind/shopmind/internal/postgres"
	"github.com/shopmind/shopmind/internal/restapi"
	"github.com/shopmind/shopmind/internal/service"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Service describes the crx service to the binary.
func Service() service.Def {
	return service.Def{
		Name:       "crx",
		Migrations: postgres.Embedded("crx", migrationFiles),
		Config:     service.ConfigLoader(LoadConfig),
		Register:   register,
		Gateway:    restapi.Routes(restapi.Route(crxv1.RegisterExtensionServiceHandlerClient, crxv1.NewExtensionServiceClient), serveZip),
	}
}

// serveZip serves the extension the binary carries (internal/crxbundle) at
// crxbundle.DownloadPath, the default download_url of the version check. Public at the edge
// (gateway.DefaultPublicRoutes): it is what a user installs before signing in.
func serveZip(_ context.Context, mux *runtime.ServeMux, _ grpc.ClientConnInterface) error {
	return mux.HandlePath(http.MethodGet, crxbundle.DownloadPath, func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		b, err := crxbundle.Zip()
		if err != nil {
			http.Error(w, "the extension is not built into this binary", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/zip")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="shopmind-extension-%s.zip"`, crxbundle.Version()))
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
	})
}

func register(ctx context.Context, s grpc.ServiceRegistrar, deps service.Deps) error {
	wh, err := warehouse.Open(ctx, deps.Config.Analytics.URL, deps.DB, deps.Logger)
	if err != nil {
		return fmt.Errorf("analytical store: %w", err)
	}
	if err := wh.Collector().EnsureCollected(ctx); err != nil {
		return fmt.Errorf("analytical store: %w", err)
	}
	srv := &server{pool: deps.DB, wh: wh, cfg: service.Settings(deps, LoadConfig), dial: deps.Dial,
		notify: notifyclient.New(deps.Dial, deps.Logger), log: deps.Logger}
	if deps.Auth != nil {
		srv.perms = deps.Auth.Permissions
	}
	crxv1.RegisterExtensionServiceServer(s, srv)
	go srv.forgetBatches(ctx)
	return nil
}

type server struct {
	crxv1.UnimplementedExtensionServiceServer
	pool   *pgxpool.Pool
	wh     warehouse.Store
	cfg    Config
	dial   func(target string) (grpc.ClientConnInterface, error)
	perms  authn.PermissionSource
	notify *notifyclient.Publisher
	log    *slog.Logger
}

func (s *server) GetVersion(_ context.Context, req *crxv1.GetVersionRequest) (*crxv1.GetVersionResponse, error) {
	out := &crxv1.GetVersionResponse{LatestVersion: s.cfg.LatestVersion, MinSupportedVersion: s.cfg.MinVersion,
		DownloadUrl: s.cfg.DownloadURL, ReleaseNotes: s.cfg.ReleaseNotes}
	if !s.cfg.ReleasedAt.IsZero() {
		out.ReleasedAt = timestamppb.New(s.cfg.ReleasedAt)
	}
	if v := req.GetCurrentVersion(); v != "" {
		out.UpdateRequired = compareVersions(v, s.cfg.MinVersion) < 0
		out.UpdateAvailable = compareVersions(v, s.cfg.LatestVersion) < 0
	}
	return out, nil
}
