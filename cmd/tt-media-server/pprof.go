package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// startPprof serves net/http/pprof on addr (PPROF_ADDR, a loopback host:port checked by
// config) on a listener of its own, away from the API's routes and middleware, until stop is
// called; bound is the listener's address. The server-path benchmark (scripts/bench-server-path.sh PROFILE=1) takes its CPU
// profiles here, from the very binary it measures.
func startPprof(addr string, log *slog.Logger) (bound net.Addr, stop func(context.Context), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on PPROF_ADDR=%s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof listener", "err", err)
		}
	}()
	log.Info("pprof listening", "addr", ln.Addr().String())
	return ln.Addr(), func(ctx context.Context) { _ = srv.Shutdown(ctx) }, nil
}
