package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Targets is a targets file: model (runner name) → device → entries, shaped like
// tt-inference-server's benchmarking/benchmark_targets/model_performance_reference.json.
// Top-level keys starting with "_" are comments.
type Targets map[string]map[string][]TargetEntry

// TargetEntry is the targets for one load on one model and device.
type TargetEntry struct {
	// Workload selects runs: Kind must match; Stream, Images and AudioSeconds match when set.
	Workload WorkloadSpec `json:"workload"`
	// Concurrency (closed loop) or Rate (open loop) must match the run's when set.
	Concurrency int     `json:"concurrency,omitempty"`
	Rate        float64 `json:"rate,omitempty"`
	// NumRequests is the request count the targets were measured with (informational).
	NumRequests int `json:"num_requests,omitempty"`
	// Targets maps a target class ("published", "theoretical", "reference") to metric →
	// value. Metrics ending in _ms are upper bounds; req_per_s, units_per_s,
	// steady_req_per_s, steady_units_per_s (Report.Steady; 0 when the run has no steady
	// window) and success_rate are lower bounds.
	Targets map[string]map[string]float64 `json:"targets"`
	// Tolerance is the fraction by which a measurement may miss a target and still pass.
	Tolerance float64 `json:"tolerance,omitempty"`
	// Source says where the numbers come from.
	Source string `json:"source"`
}

// CheckResult is one metric of one run against one target.
type CheckResult struct {
	Run      string  `json:"run"`
	Class    string  `json:"class"`
	Metric   string  `json:"metric"`
	Target   float64 `json:"target"`
	Limit    float64 `json:"limit"` // target with tolerance applied
	Measured float64 `json:"measured"`
	Pass     bool    `json:"pass"`
	Source   string  `json:"source"`
}

// LoadTargets reads and validates a targets file.
func LoadTargets(r io.Reader) (Targets, error) {
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTargets, err)
	}
	t := Targets{}
	for model, msg := range raw {
		if strings.HasPrefix(model, "_") {
			continue
		}
		var devices map[string][]TargetEntry
		if err := json.Unmarshal(msg, &devices); err != nil {
			return nil, fmt.Errorf("%w: model %q: %w", ErrTargets, model, err)
		}
		for dev, entries := range devices {
			for i, e := range entries {
				if e.Workload.Kind == "" {
					return nil, fmt.Errorf("%w: %s/%s[%d]: workload.kind is required", ErrTargets, model, dev, i)
				}
				if e.Source == "" {
					return nil, fmt.Errorf("%w: %s/%s[%d]: source is required", ErrTargets, model, dev, i)
				}
				for class, metrics := range e.Targets {
					for m := range metrics {
						if _, err := metricOf(&Report{}, m); err != nil {
							return nil, fmt.Errorf("%w: %s/%s[%d] %s: %w", ErrTargets, model, dev, i, class, err)
						}
					}
				}
			}
		}
		t[model] = devices
	}
	return t, nil
}

// Check compares r with every entry of model and device that matches the run. A model or
// device missing from the file is an error; a run no entry matches gives no results.
func (t Targets) Check(model, device string, r *Report) ([]CheckResult, error) {
	devices, ok := t[model]
	if !ok {
		return nil, fmt.Errorf("%w: no targets for model %q (have %s)", ErrTargets, model, strings.Join(slices.Sorted(maps.Keys(t)), ", "))
	}
	entries, ok := devices[device]
	if !ok {
		return nil, fmt.Errorf("%w: no targets for model %q on device %q (have %s)", ErrTargets, model, device, strings.Join(slices.Sorted(maps.Keys(devices)), ", "))
	}
	var out []CheckResult
	for _, e := range entries {
		if !e.matches(r) {
			continue
		}
		for _, class := range slices.Sorted(maps.Keys(e.Targets)) {
			metrics := e.Targets[class]
			for _, m := range slices.Sorted(maps.Keys(metrics)) {
				target := metrics[m]
				measured, err := metricOf(r, m)
				if err != nil {
					return nil, err
				}
				c := CheckResult{Run: r.Label, Class: class, Metric: m, Target: target, Measured: measured, Source: e.Source}
				if upperBound(m) {
					c.Limit = target * (1 + e.Tolerance)
					c.Pass = r.Completed > 0 && measured <= c.Limit
				} else {
					c.Limit = target * (1 - e.Tolerance)
					c.Pass = measured >= c.Limit
				}
				out = append(out, c)
			}
		}
	}
	return out, nil
}

func (e *TargetEntry) matches(r *Report) bool {
	w := e.Workload
	switch {
	case w.Kind != r.Workload.Kind:
		return false
	case e.Concurrency > 0 && (r.Mode != "closed" || e.Concurrency != r.Concurrency):
		return false
	case e.Rate > 0 && (r.Mode != "open" || e.Rate != r.Rate):
		return false
	case w.Stream && !r.Workload.Stream:
		return false
	case w.Images > 0 && max(r.Workload.Images, 1) != w.Images:
		return false
	case w.AudioSeconds > 0 && w.AudioSeconds != r.Workload.AudioSeconds:
		return false
	}
	return true
}

func upperBound(metric string) bool { return strings.HasSuffix(metric, "_ms") }

// metricOf reads a named metric from r.
func metricOf(r *Report, metric string) (float64, error) {
	var ttfc Summary
	if r.TTFC != nil {
		ttfc = *r.TTFC
	}
	switch metric {
	case "latency_mean_ms":
		return r.Latency.Mean, nil
	case "latency_p50_ms":
		return r.Latency.P50, nil
	case "latency_p90_ms":
		return r.Latency.P90, nil
	case "latency_p99_ms":
		return r.Latency.P99, nil
	case "ttfc_mean_ms":
		return ttfc.Mean, nil
	case "ttfc_p50_ms":
		return ttfc.P50, nil
	case "ttfc_p99_ms":
		return ttfc.P99, nil
	case "req_per_s":
		return r.RequestsPerS, nil
	case "units_per_s":
		return r.UnitsPerS, nil
	case "steady_req_per_s":
		if r.Steady == nil {
			return 0, nil
		}
		return r.Steady.RequestsPerS, nil
	case "steady_units_per_s":
		if r.Steady == nil {
			return 0, nil
		}
		return r.Steady.UnitsPerS, nil
	case "success_rate":
		if r.Sent == 0 {
			return 0, nil
		}
		return float64(r.Completed) / float64(r.Sent+r.Dropped), nil
	}
	return 0, fmt.Errorf("%w: unknown metric %q", ErrTargets, metric)
}

// WriteChecks writes the check results as a Markdown table and reports whether all passed.
func WriteChecks(w io.Writer, checks []CheckResult) (bool, error) {
	var b strings.Builder
	b.WriteString("| run | class | metric | target | limit | measured | result |\n|---|---|---|---:|---:|---:|---|\n")
	all := true
	for _, c := range checks {
		res := "PASS"
		if !c.Pass {
			res, all = "FAIL", false
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", cell(c.Run), c.Class, c.Metric, g(c.Target), g(c.Limit), g(c.Measured), res)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return false, fmt.Errorf("bench: write checks: %w", err)
	}
	return all, nil
}

func g(x float64) string { return fmt.Sprintf("%.4g", x) }
