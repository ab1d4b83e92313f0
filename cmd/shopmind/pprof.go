package main

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"time"
)

// startProfiler serves Go's profiles (net/http/pprof) on SHOPMIND_PPROF_ADDR when it is set:
// a listener of its own, never the gateway's, so profiles are reachable only where the
// operator binds them (a loopback address). Unset (the default): nothing is served.
func startProfiler(logger *slog.Logger) {
	addr := os.Getenv("SHOPMIND_PPROF_ADDR")
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		logger.Info("profiles served", "addr", addr)
		if err := srv.ListenAndServe(); err != nil {
			logger.Error("profiler stopped", "addr", addr, "err", err)
		}
	}()
}
