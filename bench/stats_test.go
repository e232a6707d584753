package bench

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want Summary
	}{
		{name: "empty", in: nil, want: Summary{}},
		{name: "one", in: []float64{7}, want: Summary{Count: 1, Mean: 7, Min: 7, P50: 7, P90: 7, P95: 7, P99: 7, Max: 7}},
		{
			// sorted: 15 20 35 40 50; ranks p/100*(n-1): p50→2 (35), p90→3.6 (40+0.6*10),
			// p95→3.8 (40+0.8*10), p99→3.96 (40+0.96*10); mean 32; squared deviations 289+144+9+64+324 = 830,
			// population variance 166.
			name: "five unsorted",
			in:   []float64{40, 15, 50, 35, 20},
			want: Summary{Count: 5, Mean: 32, Std: math.Sqrt(166), Min: 15, P50: 35, P90: 46, P95: 48, P99: 49.6, Max: 50},
		},
		{
			// 1..10: p50 rank 4.5 → 5.5; p90 rank 8.1 → 9.1; p95 rank 8.55 → 9.55; p99 rank 8.91 → 9.91;
			// mean 5.5; variance (n²-1)/12 = 8.25.
			name: "one to ten",
			in:   []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1},
			want: Summary{Count: 10, Mean: 5.5, Std: math.Sqrt(8.25), Min: 1, P50: 5.5, P90: 9.1, P95: 9.55, P99: 9.91, Max: 10},
		},
		{
			name: "even pair",
			in:   []float64{100, 0},
			want: Summary{Count: 2, Mean: 50, Std: 50, Min: 0, P50: 50, P90: 90, P95: 95, P99: 99, Max: 100},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.in...)
			got := Summarize(tc.in)
			require.Equal(t, tc.want.Count, got.Count)
			for _, pair := range [][2]float64{
				{tc.want.Mean, got.Mean}, {tc.want.Std, got.Std}, {tc.want.Min, got.Min}, {tc.want.P50, got.P50},
				{tc.want.P90, got.P90}, {tc.want.P95, got.P95}, {tc.want.P99, got.P99}, {tc.want.Max, got.Max},
			} {
				require.InDelta(t, pair[0], pair[1], 1e-9, "want %+v, got %+v", tc.want, got)
			}
			require.Equal(t, in, tc.in, "Summarize must not reorder its input")
		})
	}
}

func TestPercentileEdges(t *testing.T) {
	s := []float64{1, 2, 3, 4}
	tests := []struct {
		p, want float64
	}{
		{-5, 1}, {0, 1}, {25, 1.75}, {100, 4}, {150, 4}, {75, 3.25},
	}
	for _, tc := range tests {
		require.InDelta(t, tc.want, Percentile(s, tc.p), 1e-12, "p=%v", tc.p)
	}
	require.Zero(t, Percentile(nil, 50))
}
