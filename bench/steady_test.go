package bench

import (
	"bytes"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// timeline builds samples from (send offset, latency, status, units) in milliseconds.
type ev struct {
	sendMs, latMs int
	status        int
	units         float64
}

func timeline(t0 time.Time, evs []ev) []sample {
	out := make([]sample, len(evs))
	for i, e := range evs {
		out[i] = sample{status: e.status, sent: t0.Add(time.Duration(e.sendMs) * time.Millisecond),
			latency: time.Duration(e.latMs) * time.Millisecond, units: e.units, ttfc: -1}
	}
	return out
}

// openConstant: n sends every periodMs, each answered after latMs.
func openConstant(n, periodMs, latMs int, units float64) []ev {
	out := make([]ev, n)
	for i := range out {
		out[i] = ev{sendMs: i * periodMs, latMs: latMs, status: 200, units: units}
	}
	return out
}

// closedLoopEvents: c workers each sending k requests back to back, each taking latMs.
func closedLoopEvents(c, k, latMs int) []ev {
	var out []ev
	for range c {
		for i := range k {
			out = append(out, ev{sendMs: i * latMs, latMs: latMs, status: 200})
		}
	}
	return out
}

// coldStart: sends every 100 ms from 0 to 2 s; the first ten are all answered at 1 s, the
// next eleven after 100 ms each; then three more sends at 2.1..2.3 s answered after 2 s.
func coldStart() []ev {
	var out []ev
	for i := range 21 {
		lat := 100
		if i < 10 {
			lat = 1000 - i*100
		}
		out = append(out, ev{sendMs: i * 100, latMs: lat, status: 200})
	}
	for _, at := range []int{2100, 2200, 2300} {
		out = append(out, ev{sendMs: at, latMs: 2000, status: 200})
	}
	return out
}

func TestSteadyWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		evs  []ev
		want *Steady
		note string
	}{
		{
			// 10/s for 5 s into a 300 ms server: the whole run is 50 / 5.2 s = 9.6/s, the
			// steady window (0.3 s, 4.9 s] holds sends 1..46's answers: exactly 10/s.
			name: "open loop constant rate, latency longer than the period",
			evs:  openConstant(50, 100, 300, 2),
			want: &Steady{StartS: 0.3, EndS: 4.9, Completed: 46, Sent: 46, RequestsPerS: 10, SentPerS: 10, Units: 92, UnitsPerS: 20},
		},
		{
			// Two workers at 100 ms, ten requests each: N/L = 20/s; the whole run gives 20 / 1 s
			// too, but only because nothing drains; the window (0.1 s, 0.9 s] holds 16 answers.
			name: "closed loop in lock step",
			evs:  closedLoopEvents(2, 10, 100),
			want: &Steady{StartS: 0.1, EndS: 0.9, Completed: 16, Sent: 16, RequestsPerS: 20, SentPerS: 20},
		},
		{
			// A cold start (sends every 100 ms; nothing is answered before 1 s, then the backlog
			// all at once) and a long drain (the last three answers take 2 s): neither is in
			// the window.
			name: "slow first answer and long drain excluded",
			evs:  coldStart(),
			// Window (1.0 s, 2.3 s]: answers of sends 10..20 at 1.1..2.1 s (11 of them).
			want: &Steady{StartS: 1.0, EndS: 2.3, Completed: 11, Sent: 13, RequestsPerS: 11 / 1.3, SentPerS: 13 / 1.3},
		},
		{
			// Fast 429s at the start do not open the window; failures are sent but not completed.
			name: "rejections neither open the window nor count as completed",
			evs: []ev{
				{sendMs: 0, latMs: 1, status: 429}, {sendMs: 0, latMs: 200, status: 200},
				{sendMs: 100, latMs: 1, status: 429}, {sendMs: 200, latMs: 200, status: 200},
				{sendMs: 300, latMs: 1, status: 429}, {sendMs: 400, latMs: 200, status: 200},
				{sendMs: 500, latMs: 1, status: 503}, {sendMs: 600, latMs: 200, status: 200},
			},
			// Window (0.2 s, 0.6 s]: answers at 0.4 and 0.6 s; sends at 0.3..0.6 s.
			want: &Steady{StartS: 0.2, EndS: 0.6, Completed: 2, Sent: 4, RequestsPerS: 5, SentPerS: 10},
		},
		{
			name: "everything sent before the first answer",
			evs:  []ev{{0, 100, 200, 0}, {0, 100, 200, 0}, {1, 100, 200, 0}, {2, 100, 200, 0}},
			note: steadyTooShort,
		},
		{
			name: "last send at the instant of the first answer",
			evs:  []ev{{0, 100, 200, 0}, {100, 100, 200, 0}},
			note: steadyTooShort,
		},
		{
			name: "nothing completed",
			evs:  []ev{{0, 1, 429, 0}, {100, 1, 429, 0}, {200, 1, 429, 0}},
			note: steadyNoCompletion,
		},
		{name: "empty run", note: steadyNoCompletion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, note := steadyWindow(timeline(t0, tc.evs))
			require.Equal(t, tc.note, note)
			if tc.want == nil {
				require.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			require.InDelta(t, tc.want.StartS, got.StartS, 1e-9)
			require.InDelta(t, tc.want.EndS, got.EndS, 1e-9)
			require.Equal(t, tc.want.Completed, got.Completed)
			require.Equal(t, tc.want.Sent, got.Sent)
			require.InDelta(t, tc.want.RequestsPerS, got.RequestsPerS, 1e-9)
			require.InDelta(t, tc.want.SentPerS, got.SentPerS, 1e-9)
			require.InDelta(t, tc.want.Units, got.Units, 1e-9)
			require.InDelta(t, tc.want.UnitsPerS, got.UnitsPerS, 1e-9)
		})
	}
}

func TestSteadyWindowIgnoresUnsent(t *testing.T) {
	t0 := time.Now()
	s := timeline(t0, openConstant(11, 100, 100, 0))
	s = append(s, sample{errKind: "error:request", ttfc: -1}) // never sent: no send time
	got, note := steadyWindow(s)
	require.Empty(t, note)
	require.Equal(t, 0.1, got.StartS)
	require.InDelta(t, 1.0, got.EndS, 1e-9)
	require.Equal(t, 9, got.Completed) // answers at 0.2 .. 1.0 s
}

func TestBuildReportSteadyAndMarkdown(t *testing.T) {
	w, err := NewWorkload(WorkloadSpec{Kind: KindImage})
	require.NoError(t, err)
	u, _ := url.Parse("http://127.0.0.1:1")
	cfg := &Config{BaseURL: u, Workload: w, Rate: 10, Arrival: ArrivalConstant}
	t0 := time.Now()
	r := buildReport(cfg, timeline(t0, openConstant(50, 100, 300, 1)), 0, t0, 5200*time.Millisecond)
	require.InDelta(t, 50/5.2, r.RequestsPerS, 1e-9)
	require.NotNil(t, r.Steady)
	require.Empty(t, r.SteadyNote)
	require.InDelta(t, 10, r.Steady.RequestsPerS, 1e-9)
	require.InDelta(t, 10, r.Steady.UnitsPerS, 1e-9)

	short := buildReport(cfg, timeline(t0, []ev{{0, 100, 200, 1}}), 0, t0, 100*time.Millisecond)
	require.Nil(t, short.Steady)
	require.Equal(t, steadyTooShort, short.SteadyNote)

	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, r))
	require.Contains(t, b.String(), `"steady": {`)
	back, err := ReadJSON(&b)
	require.NoError(t, err)
	require.Equal(t, r.Steady, back.Steady)

	b.Reset()
	require.NoError(t, WriteMarkdown(&b, []*Report{r, short}))
	lines := bytes.Split(bytes.TrimSpace(b.Bytes()), []byte("\n"))
	require.Len(t, lines, 4)
	require.Contains(t, string(lines[0]), "| req/s | steady req/s | units/s | steady units/s | mean |")
	require.Contains(t, string(lines[2]), "| 9.62 | 10.00 | 9.62 images | 10.00 images | 300.0 |")
	require.Contains(t, string(lines[3]), "| 10.00 | - | 10.00 images | - |")
	require.Equal(t, bytes.Count(lines[0], []byte("|")), bytes.Count(lines[1], []byte("|")))
	require.Equal(t, bytes.Count(lines[0], []byte("|")), bytes.Count(lines[3], []byte("|")))
}

func TestTargetsSteadyMetrics(t *testing.T) {
	tg, err := LoadTargets(bytes.NewReader([]byte(`{"m": {"d": [{"workload": {"kind": "image"}, "rate": 10,
		"targets": {"theoretical": {"steady_req_per_s": 10, "steady_units_per_s": 20}}, "tolerance": 0.01, "source": "test"}]}}`)))
	require.NoError(t, err)
	tests := []struct {
		name   string
		steady *Steady
		want   map[string]bool
	}{
		{"meets both", &Steady{RequestsPerS: 9.95, UnitsPerS: 20}, map[string]bool{"steady_req_per_s": true, "steady_units_per_s": true}},
		{"misses rate", &Steady{RequestsPerS: 9.8, UnitsPerS: 19.9}, map[string]bool{"steady_req_per_s": false, "steady_units_per_s": true}},
		{"no steady window", nil, map[string]bool{"steady_req_per_s": false, "steady_units_per_s": false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Workload: WorkloadSpec{Kind: KindImage}, Mode: "open", Rate: 10, Completed: 1, Steady: tc.steady}
			checks, err := tg.Check("m", "d", r)
			require.NoError(t, err)
			got := map[string]bool{}
			for _, c := range checks {
				got[c.Metric] = c.Pass
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// Video jobs: the device ends a job every second (3 s after each send), but the encode after
// it takes longer and longer (0.5 s, 1 s, ... as a loaded host slows), so completions come
// ever later: the completion rate understates the devices' 1/s, which the device-done rate
// (last step seen, before the encode) gives exactly.
func TestSteadyWindowDeviceDone(t *testing.T) {
	t0 := time.Now()
	var s []sample
	for i := range 10 {
		finish := time.Duration(500*(i+1)) * time.Millisecond
		s = append(s, sample{status: 202, sent: t0.Add(time.Duration(i) * time.Second), latency: 3*time.Second + finish,
			finishMs: float64(finish) / float64(time.Millisecond), hasFinish: true, hasDevice: true, units: 1, ttfc: -1})
	}
	got, note := steadyWindow(s)
	require.Empty(t, note)
	// Device ends at 3..12 s; last send 9 s: (3, 9] holds the ends at 4..9 s, 6 in 6 s.
	require.Equal(t, 6, got.DeviceDone)
	require.InDelta(t, 1.0, got.DeviceDonePerS, 1e-9)
	// Completions at 3.5, 5, 6.5, 8, 9.5 ...: (3.5, 9] holds 3 in 5.5 s.
	require.Equal(t, 3, got.Completed)
	require.InDelta(t, 3/5.5, got.RequestsPerS, 1e-9)

	// Without finish times (not video jobs) there is no device-done rate.
	got, _ = steadyWindow(timeline(t0, openConstant(11, 100, 100, 0)))
	require.Zero(t, got.DeviceDone)
	require.Zero(t, got.DeviceDonePerS)
}
