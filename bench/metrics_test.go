package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParsePromText(t *testing.T) {
	text := `# HELP tt_media_server_queue_wait_seconds Time jobs waited.
# TYPE tt_media_server_queue_wait_seconds histogram
tt_media_server_queue_wait_seconds_bucket{model="a",le="0.001"} 3
tt_media_server_queue_wait_seconds_sum{model="a"} 0.5
tt_media_server_queue_wait_seconds_sum{model="b,}"} 0.25 1700000000000
tt_media_server_queue_wait_seconds_count{model="a"} 10
tt_media_server_queue_wait_seconds_count 2
other_metric 7
`
	got, err := ParsePromText(strings.NewReader(text), metricQueueWaitSum, metricQueueWaitCount, metricDeviceSum)
	require.NoError(t, err)
	require.Equal(t, map[string]float64{metricQueueWaitSum: 0.75, metricQueueWaitCount: 12}, got)

	_, err = ParsePromText(strings.NewReader(`tt_media_server_device_seconds_sum{model="a" 1`), metricDeviceSum)
	require.Error(t, err)
	_, err = ParsePromText(strings.NewReader(`tt_media_server_device_seconds_sum x`), metricDeviceSum)
	require.Error(t, err)
}

func TestRunServerMetrics(t *testing.T) {
	// Every job adds 2 ms of queue wait and 5 ms of device time to the server's histograms.
	var jobs atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			if r.Header.Get("Authorization") != "Bearer k" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			n := float64(jobs.Load())
			fmt.Fprintf(w, "%s{model=\"m\"} %g\n%s{model=\"m\"} %g\n%s{model=\"m\",worker=\"0\"} %g\n%s{model=\"m\",worker=\"0\"} %g\n",
				metricQueueWaitSum, 0.002*n, metricQueueWaitCount, n, metricDeviceSum, 0.005*n, metricDeviceCount, n)
			return
		}
		jobs.Add(1)
		_, _ = w.Write([]byte(`{"images":["x"]}`))
	}))
	defer ts.Close()
	u, _ := url.Parse(ts.URL)
	rep, err := Run(t.Context(), Config{
		BaseURL: u, Workload: workload(t, WorkloadSpec{Kind: KindImage}), Token: "k",
		Concurrency: 2, Requests: 10, WarmupRequests: 3, ServerMetrics: true,
	})
	require.NoError(t, err)
	require.NotNil(t, rep.Server)
	require.InDelta(t, 10, rep.Server.Jobs, 1e-9, "warm-up jobs are not counted")
	require.InDelta(t, 2, rep.Server.QueueWaitMeanMs, 1e-9)
	require.InDelta(t, 5, rep.Server.DeviceMeanMs, 1e-9)

	var b strings.Builder
	require.NoError(t, WriteMarkdown(&b, []*Report{rep, {Label: "other", Status: map[string]int{}}}))
	require.Contains(t, b.String(), "| queue wait | device |\n")
	require.Contains(t, b.String(), " 2.0 | 5.0 |\n")
	require.Contains(t, b.String(), " - | - |\n")

	// A server without /metrics: the run still reports, and says why the split is missing.
	_, u2 := startFake(t, 0)
	rep, err = Run(t.Context(), Config{BaseURL: u2, Workload: workload(t, WorkloadSpec{Kind: KindLiveness}), Concurrency: 1, Requests: 2, ServerMetrics: true})
	require.NoError(t, err)
	require.Nil(t, rep.Server)
	require.Contains(t, rep.ServerError, "scrape /metrics: status 401")
}
