package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPprof: PPROF_ADDR serves the profiler's index on a listener of its own, which stop
// closes; an address that cannot be listened on is an error naming PPROF_ADDR.
func TestPprof(t *testing.T) {
	addr, stop, err := startPprof("127.0.0.1:0", slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	resp, err := http.Get("http://" + addr.String() + "/debug/pprof/")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "goroutine")
	stop(context.Background())
	if resp, err := http.Get("http://" + addr.String() + "/debug/pprof/"); err == nil {
		_ = resp.Body.Close()
		t.Fatal("the pprof listener still answers after stop")
	}

	_, _, err = startPprof("127.0.0.1:bad", slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "PPROF_ADDR=127.0.0.1:bad")
}
