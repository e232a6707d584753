package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSeededTargetsFileLoads(t *testing.T) {
	f, err := os.Open(filepath.Join("targets", "media.json"))
	require.NoError(t, err)
	defer f.Close()
	tg, err := LoadTargets(f)
	require.NoError(t, err)
	for _, model := range []string{"tt-sdxl-trace", "tt-sd3.5", "tt-whisper", "tt-xla-resnet"} {
		require.Contains(t, tg, model)
	}
	require.NotContains(t, tg, "_comment")
	// The N150 SDXL figure: 8.955 s/image.
	r := &Report{Label: "c=1", Workload: WorkloadSpec{Kind: KindImage}, Mode: "closed", Concurrency: 1, Sent: 4, Completed: 4,
		Latency: Summary{Mean: 9000}, UnitsPerS: 0.111}
	checks, err := tg.Check("tt-sdxl-trace", "n150", r)
	require.NoError(t, err)
	require.Len(t, checks, 2)
	for _, c := range checks {
		require.True(t, c.Pass, "%+v within the 5%% tolerance", c)
		require.Contains(t, c.Source, "stable_diffusion_xl_base/README.md")
	}
}

const testTargets = `{
  "_comment": "ignored",
  "m": {
    "dev": [
      {"workload": {"kind": "image"}, "concurrency": 2,
       "targets": {"theoretical": {"latency_p99_ms": 100, "req_per_s": 10}, "published": {"success_rate": 0.99}},
       "tolerance": 0.1, "source": "test"},
      {"workload": {"kind": "audio", "stream": true}, "rate": 5,
       "targets": {"published": {"ttfc_p50_ms": 50}}, "source": "test"}
    ]
  }
}`

func TestTargetsCheck(t *testing.T) {
	tg, err := LoadTargets(strings.NewReader(testTargets))
	require.NoError(t, err)

	img := func(p99, rps float64, completed, sent int) *Report {
		return &Report{Label: "r", Workload: WorkloadSpec{Kind: KindImage}, Mode: "closed", Concurrency: 2,
			Sent: sent, Completed: completed, RequestsPerS: rps, Latency: Summary{P99: p99}}
	}
	tests := []struct {
		name string
		r    *Report
		want map[string]bool // metric → pass
	}{
		{"all pass", img(90, 12, 100, 100), map[string]bool{"latency_p99_ms": true, "req_per_s": true, "success_rate": true}},
		{"inside tolerance", img(109.9, 9.01, 90, 100), map[string]bool{"latency_p99_ms": true, "req_per_s": true, "success_rate": true}},
		{"outside tolerance", img(110.1, 8.99, 89, 100), map[string]bool{"latency_p99_ms": false, "req_per_s": false, "success_rate": false}},
		{"nothing completed", img(0, 0, 0, 10), map[string]bool{"latency_p99_ms": false, "req_per_s": false, "success_rate": false}},
		{"other concurrency", &Report{Workload: WorkloadSpec{Kind: KindImage}, Mode: "closed", Concurrency: 4}, map[string]bool{}},
		{"open loop stream", &Report{Workload: WorkloadSpec{Kind: KindAudio, Stream: true}, Mode: "open", Rate: 5, Completed: 1, TTFC: &Summary{P50: 49}}, map[string]bool{"ttfc_p50_ms": true}},
		{"open loop no stream", &Report{Workload: WorkloadSpec{Kind: KindAudio}, Mode: "open", Rate: 5, Completed: 1}, map[string]bool{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checks, err := tg.Check("m", "dev", tc.r)
			require.NoError(t, err)
			got := map[string]bool{}
			for _, c := range checks {
				got[c.Metric] = c.Pass
			}
			require.Equal(t, tc.want, got)
		})
	}

	_, err = tg.Check("nope", "dev", img(1, 1, 1, 1))
	require.ErrorIs(t, err, ErrTargets)
	_, err = tg.Check("m", "n150", img(1, 1, 1, 1))
	require.ErrorIs(t, err, ErrTargets)
}

func TestLoadTargetsRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"not json":       `{`,
		"no kind":        `{"m": {"d": [{"workload": {}, "targets": {}, "source": "s"}]}}`,
		"no source":      `{"m": {"d": [{"workload": {"kind": "image"}, "targets": {}}]}}`,
		"unknown metric": `{"m": {"d": [{"workload": {"kind": "image"}, "targets": {"x": {"tokens_per_s": 1}}, "source": "s"}]}}`,
		"wrong shape":    `{"m": [1, 2]}`,
	} {
		_, err := LoadTargets(strings.NewReader(doc))
		require.ErrorIs(t, err, ErrTargets, name)
	}
}

func TestWriteChecks(t *testing.T) {
	var b strings.Builder
	ok, err := WriteChecks(&b, []CheckResult{
		{Run: "c=1", Class: "published", Metric: "latency_mean_ms", Target: 8955, Limit: 9402.75, Measured: 9000, Pass: true},
		{Run: "c=1", Class: "published", Metric: "units_per_s", Target: 0.1117, Limit: 0.1061, Measured: 0.1, Pass: false},
	})
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, "| run | class | metric | target | limit | measured | result |\n|---|---|---|---:|---:|---:|---|\n"+
		"| c=1 | published | latency_mean_ms | 8955 | 9403 | 9000 | PASS |\n"+
		"| c=1 | published | units_per_s | 0.1117 | 0.1061 | 0.1 | FAIL |\n", b.String())
}
