package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

const probeUsage = `shopmind probe --grpc=HOST:PORT | --http=URL [--timeout=2s]
                                      exit 0 when the gRPC server answers grpc.health.v1 SERVING,
                                      or the URL (e.g. http://127.0.0.1:8080/readyz) answers 200:
                                      a health check for images without a shell (compose, systemd)`

// runProbe checks one process's health: its gRPC server's grpc.health.v1 status (the
// overall service "") or an HTTP URL of the gateway (/healthz, /readyz).
func runProbe(args []string) error {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	grpcAddr := fs.String("grpc", "", "gRPC address whose grpc.health.v1 status must be SERVING")
	url := fs.String("http", "", "URL that must answer 200")
	timeout := fs.Duration("timeout", 2*time.Second, "bound of the check")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (*grpcAddr == "") == (*url == "") {
		return fmt.Errorf("probe: give exactly one of --grpc and --http\n  %s", probeUsage)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if *grpcAddr != "" {
		conn, err := grpc.NewClient(*grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return fmt.Errorf("probe %s: %w", *grpcAddr, err)
		}
		defer conn.Close()
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return fmt.Errorf("probe %s: %w", *grpcAddr, err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			return fmt.Errorf("probe %s: %s", *grpcAddr, resp.GetStatus())
		}
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", *url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", *url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: HTTP %d %s", *url, resp.StatusCode, body)
	}
	return nil
}
