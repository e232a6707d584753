package bench

import (
	"bytes"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBuildReport(t *testing.T) {
	w, err := NewWorkload(WorkloadSpec{Kind: KindAudio, AudioSeconds: 2, Stream: true})
	require.NoError(t, err)
	u, _ := url.Parse("http://127.0.0.1:1")
	cfg := &Config{BaseURL: u, Workload: w, Concurrency: 2}
	samples := []sample{
		{status: 200, latency: 10 * time.Millisecond, ttfc: 2 * time.Millisecond, units: 2},
		{status: 200, latency: 30 * time.Millisecond, ttfc: 4 * time.Millisecond, units: 2},
		{status: 200, latency: 20 * time.Millisecond, ttfc: -1, units: 2}, // no chunk before the final line
		{status: 429, latency: time.Millisecond, ttfc: -1, errMsg: ""},
		{status: 200, errKind: "stream_error:500", errMsg: "device lost", ttfc: 3 * time.Millisecond, latency: 5 * time.Millisecond},
		{errKind: "error:timeout", errMsg: "deadline", ttfc: -1},
		{errKind: "error:timeout", errMsg: "deadline", ttfc: -1},
	}
	r := buildReport(cfg, samples, 3, time.Unix(0, 0), 2*time.Second)
	require.Equal(t, "c=2", r.Label)
	require.Equal(t, "closed", r.Mode)
	require.Equal(t, 7, r.Sent)
	require.Equal(t, 3, r.Completed)
	require.Equal(t, 4, r.Failed)
	require.Equal(t, 3, r.Dropped)
	require.Equal(t, map[string]int{"200": 3, "429": 1, "stream_error:500": 1, "error:timeout": 2}, r.Status)
	require.Equal(t, []string{"device lost", "deadline"}, r.Errors)
	require.InDelta(t, 1.5, r.RequestsPerS, 1e-9)
	require.InDelta(t, 6, r.Units, 1e-9)
	require.InDelta(t, 3, r.UnitsPerS, 1e-9)
	require.Equal(t, 3, r.Latency.Count)
	require.InDelta(t, 20, r.Latency.Mean, 1e-9)
	require.InDelta(t, 20, r.Latency.P50, 1e-9)
	require.NotNil(t, r.TTFC)
	require.Equal(t, 2, r.TTFC.Count)
	require.InDelta(t, 3, r.TTFC.Mean, 1e-9)
	require.Equal(t, "200:3 429:1 error:timeout:2 stream_error:500:1", r.StatusString())
}

func TestWriteMarkdown(t *testing.T) {
	reports := []*Report{
		{
			Label: "c=4", Workload: WorkloadSpec{Kind: KindImage, Images: 4}, Mode: "closed", Concurrency: 4,
			Sent: 40, Completed: 38, Failed: 2, Status: map[string]int{"200": 38, "429": 2},
			RequestsPerS: 12.345, UnitName: "images", UnitsPerS: 49.38,
			Latency: Summary{Count: 38, Mean: 315.04, P50: 300, P90: 400.55, P99: 601.25, Std: 50.5},
		},
		{
			Label: "a|b", Workload: WorkloadSpec{Kind: KindAudio, Stream: true}, Mode: "open", Rate: 2.5, Arrival: ArrivalPoisson,
			Sent: 10, Dropped: 1, Completed: 10, Status: map[string]int{"200": 10},
			RequestsPerS: 2.5, UnitName: "audio_s", UnitsPerS: 12.5,
			Latency: Summary{Count: 10, Mean: 100, P50: 100, P90: 100, P99: 100},
			TTFC:    &Summary{Count: 10, P50: 12.34, P99: 20},
		},
		{
			Label: "live", Workload: WorkloadSpec{Kind: KindLiveness}, Mode: "closed", Concurrency: 16,
			Sent: 5, Completed: 5, Status: map[string]int{"200": 5}, RequestsPerS: 1000,
			Latency: Summary{Count: 5, Mean: 1, P50: 1, P90: 1, P99: 1},
		},
	}
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, reports))
	want := "| run | workload | load | sent | ok | failed | status | req/s | units/s | mean | p50 | p90 | p99 | std | TTFC p50 | TTFC p99 |\n" +
		"|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" +
		"| c=4 | image x4 | c=4 | 40 | 38 | 2 | 200:38 429:2 | 12.35 | 49.38 images | 315.0 | 300.0 | 400.6 | 601.2 | 50.5 | - | - |\n" +
		"| a\\|b | audio 5s stream | rate=2.5/s poisson | 10 (+1 dropped) | 10 | 0 | 200:10 | 2.50 | 12.50 audio_s | 100.0 | 100.0 | 100.0 | 100.0 | 0.0 | 12.3 | 20.0 |\n" +
		"| live | liveness | c=16 | 5 | 5 | 0 | 200:5 | 1000.00 | - | 1.0 | 1.0 | 1.0 | 1.0 | 0.0 | - | - |\n"
	require.Equal(t, want, b.String())
}

func TestReportJSONRoundTrip(t *testing.T) {
	in := &Report{
		Label: "x", Target: "http://127.0.0.1:1", Workload: WorkloadSpec{Kind: KindCNN}, Mode: "closed", Concurrency: 1,
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), DurationS: 1.5, Sent: 3, Completed: 3,
		Status: map[string]int{"200": 3}, RequestsPerS: 2, UnitName: "images", Units: 3, UnitsPerS: 2,
		Latency: Summary{Count: 3, Mean: 1, Std: 0.5, Min: 0.5, P50: 1, P90: 1.4, P99: 1.49, Max: 1.5},
	}
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, in))
	require.Contains(t, b.String(), `"p99_ms": 1.49`)
	require.Contains(t, b.String(), `"requests_per_s": 2`)
	require.NotContains(t, b.String(), "ttfc_ms", "no TTFC for a run that did not stream")
	out, err := ReadJSON(&b)
	require.NoError(t, err)
	require.Equal(t, in, out)
}

func TestBuildReportTimingHeaders(t *testing.T) {
	w, err := NewWorkload(WorkloadSpec{Kind: KindImage})
	require.NoError(t, err)
	u, _ := url.Parse("http://127.0.0.1:1")
	cfg := &Config{BaseURL: u, Workload: w, Rate: 4, Arrival: ArrivalConstant}
	tests := []struct {
		name            string
		samples         []sample
		queue, device   *Summary
		markdownColumns string
	}{
		{
			name:    "no headers",
			samples: []sample{{status: 200, ttfc: -1}, {status: 429, ttfc: -1}},
		},
		{
			name: "headers on completed requests only",
			samples: []sample{
				{status: 200, ttfc: -1, queueMs: 0, hasQueue: true, deviceMs: 240, hasDevice: true},
				{status: 200, ttfc: -1, queueMs: 100, hasQueue: true, deviceMs: 250, hasDevice: true},
				{status: 200, ttfc: -1, queueMs: 200, hasQueue: true, deviceMs: 260, hasDevice: true},
				{status: 200, ttfc: -1}, // e.g. a stream: no headers, not counted as 0
				{status: 429, ttfc: -1, queueMs: 9999, hasQueue: true},
			},
			queue:           &Summary{Count: 3, Mean: 100, Std: 81.64965809277261, Min: 0, P50: 100, P90: 180, P99: 198, Max: 200},
			device:          &Summary{Count: 3, Mean: 250, Std: 8.16496580927726, Min: 240, P50: 250, P90: 258, P99: 259.8, Max: 260},
			markdownColumns: " 100.0 | 198.0 | 250.0 |",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := buildReport(cfg, tc.samples, 0, time.Unix(0, 0), time.Second)
			if tc.queue == nil {
				require.Nil(t, r.QueueWait)
				require.Nil(t, r.DeviceTime)
			} else {
				require.NotNil(t, r.QueueWait)
				require.NotNil(t, r.DeviceTime)
				require.InDeltaMapValues(t, summaryMap(*tc.queue), summaryMap(*r.QueueWait), 1e-9)
				require.InDeltaMapValues(t, summaryMap(*tc.device), summaryMap(*r.DeviceTime), 1e-9)
			}
			var b bytes.Buffer
			require.NoError(t, WriteMarkdown(&b, []*Report{r}))
			if tc.markdownColumns == "" {
				require.NotContains(t, b.String(), "queue p99")
			} else {
				require.Contains(t, b.String(), " queue p50 | queue p99 | device p50 |\n")
				require.Contains(t, b.String(), tc.markdownColumns+"\n")
			}
		})
	}
}

func summaryMap(s Summary) map[string]float64 {
	return map[string]float64{
		"count": float64(s.Count), "mean": s.Mean, "std": s.Std, "min": s.Min,
		"p50": s.P50, "p90": s.P90, "p99": s.P99, "max": s.Max,
	}
}
