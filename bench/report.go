package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Report is the outcome of one measured run (the per-run JSON).
type Report struct {
	Label       string       `json:"label"`
	Target      string       `json:"target"`
	Workload    WorkloadSpec `json:"workload"`
	Mode        string       `json:"mode"` // "closed" or "open"
	Concurrency int          `json:"concurrency,omitempty"`
	Rate        float64      `json:"rate,omitempty"`
	Arrival     Arrival      `json:"arrival,omitempty"`
	StartedAt   time.Time    `json:"started_at"`
	DurationS   float64      `json:"duration_s"`

	Sent      int `json:"sent"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// Dropped counts open-loop arrivals not sent because MaxInFlight requests were pending.
	Dropped int `json:"dropped,omitempty"`
	// Status counts every outcome: HTTP status codes ("200", "429") and transport errors
	// ("error:timeout", "error:connect", "stream_error:500", ...).
	Status map[string]int `json:"status"`
	// Errors holds up to five distinct failure messages.
	Errors []string `json:"errors,omitempty"`

	RequestsPerS float64 `json:"requests_per_s"`
	UnitName     string  `json:"unit_name,omitempty"`
	Units        float64 `json:"units,omitempty"`
	UnitsPerS    float64 `json:"units_per_s,omitempty"`
	// Steady is the same throughput over the steady window only (first completion to last
	// send: no ramp from idle, no drain); SteadyNote says why it is missing.
	Steady     *Steady `json:"steady,omitempty"`
	SteadyNote string  `json:"steady_note,omitempty"`

	// Latency is end to end (request sent to body read) over completed requests.
	Latency Summary `json:"latency_ms"`
	// TTFC is time to first chunk over completed streaming requests (speech: the first audio).
	TTFC *Summary `json:"ttfc_ms,omitempty"`
	// RTF is the real-time factor of completed speech requests: the audio seconds each one
	// answered per second of its wall time (above 1: faster than real time).
	RTF *RTF `json:"rtf,omitempty"`
	// QueueWait and DeviceTime summarize the X-Queue-Time-Ms and X-Device-Time-Ms headers of
	// the completed requests that carried them (absent when none did).
	QueueWait  *Summary `json:"queue_wait_ms,omitempty"`
	DeviceTime *Summary `json:"device_time_ms,omitempty"`
	// Finish summarizes video jobs' last denoising step → completed (the clip's decode on the
	// device, then the MP4 encode, thumbnail and spritesheet off it), as followJob measures it.
	Finish *Summary `json:"finish_ms,omitempty"`
	// Server is the server's queue-wait versus device-time split from /metrics (when asked
	// for); ServerError says why it is missing.
	Server      *ServerTiming `json:"server,omitempty"`
	ServerError string        `json:"server_error,omitempty"`
}

func buildReport(cfg *Config, samples []sample, dropped int, started time.Time, elapsed time.Duration) *Report {
	r := &Report{
		Label:     cfg.Label,
		Target:    cfg.BaseURL.String(),
		Workload:  cfg.Workload.Spec,
		StartedAt: started.UTC(),
		DurationS: elapsed.Seconds(),
		Sent:      len(samples),
		Dropped:   dropped,
		Status:    map[string]int{},
		UnitName:  cfg.Workload.UnitName,
	}
	if cfg.Concurrency > 0 {
		r.Mode, r.Concurrency = "closed", cfg.Concurrency
	} else {
		r.Mode, r.Rate, r.Arrival = "open", cfg.Rate, cfg.Arrival
	}
	if r.Label == "" {
		r.Label = r.LoadString()
	}
	var lat, ttfc, queue, device, finish, rtf []float64
	for _, s := range samples {
		key := s.errKind
		if key == "" {
			key = strconv.Itoa(s.status)
		}
		r.Status[key]++
		if !s.ok() {
			r.Failed++
			if s.errMsg != "" && len(r.Errors) < 5 && !slices.Contains(r.Errors, s.errMsg) {
				r.Errors = append(r.Errors, s.errMsg)
			}
			continue
		}
		r.Completed++
		r.Units += s.units
		lat = append(lat, ms(s.latency))
		if s.ttfc >= 0 {
			ttfc = append(ttfc, ms(s.ttfc))
		}
		if cfg.Workload.Spec.Kind == KindSpeech && s.latency > 0 {
			rtf = append(rtf, s.units/s.latency.Seconds())
		}
		if s.hasQueue {
			queue = append(queue, s.queueMs)
		}
		if s.hasDevice {
			device = append(device, s.deviceMs)
		}
		if s.hasFinish {
			finish = append(finish, s.finishMs)
		}
	}
	if len(queue) > 0 {
		q := Summarize(queue)
		r.QueueWait = &q
	}
	if len(device) > 0 {
		d := Summarize(device)
		r.DeviceTime = &d
	}
	if len(finish) > 0 {
		f := Summarize(finish)
		r.Finish = &f
	}
	r.Latency = Summarize(lat)
	if len(rtf) > 0 {
		x := Summarize(rtf)
		r.RTF = &RTF{Count: x.Count, Mean: x.Mean, Min: x.Min, P50: x.P50, Max: x.Max}
	}
	if cfg.Workload.Spec.Stream {
		t := Summarize(ttfc)
		r.TTFC = &t
	}
	if secs := elapsed.Seconds(); secs > 0 {
		r.RequestsPerS = float64(r.Completed) / secs
		r.UnitsPerS = r.Units / secs
	}
	r.Steady, r.SteadyNote = steadyWindow(samples)
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// LoadString describes the offered load: "c=8" or "rate=20/s poisson".
func (r *Report) LoadString() string {
	if r.Mode == "open" {
		return fmt.Sprintf("rate=%s/s %s", strconv.FormatFloat(r.Rate, 'g', -1, 64), r.Arrival)
	}
	return "c=" + strconv.Itoa(r.Concurrency)
}

// StatusString lists the status counts in a stable order: "200:95 429:5".
func (r *Report) StatusString() string {
	keys := slices.Sorted(maps.Keys(r.Status))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ":" + strconv.Itoa(r.Status[k])
	}
	return strings.Join(parts, " ")
}

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("bench: write report: %w", err)
	}
	return nil
}

// ReadJSON reads a report written by WriteJSON.
func ReadJSON(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("bench: read report: %w", err)
	}
	return &r, nil
}

// WriteMarkdown writes one table row per run: outcome counts, throughput and latency
// percentiles in milliseconds (TTFC columns show "-" for runs that did not stream). When any
// run has a steady window, "steady req/s" and "steady units/s" columns follow the whole-run
// ones ("-" for runs without). When any run has the server's split, two more columns give its
// mean queue wait and device time; when any has the X-Queue-Time-Ms / X-Device-Time-Ms
// summaries, three more give the queue wait's p50 and p99 and the device time's p50; when any
// has video jobs' finish times, two more give their p50 and p99.
func WriteMarkdown(w io.Writer, reports []*Report) error {
	var b strings.Builder
	steady := slices.ContainsFunc(reports, func(r *Report) bool { return r.Steady != nil })
	server := slices.ContainsFunc(reports, func(r *Report) bool { return r.Server != nil })
	headers := slices.ContainsFunc(reports, func(r *Report) bool { return r.QueueWait != nil || r.DeviceTime != nil })
	rtf := slices.ContainsFunc(reports, func(r *Report) bool { return r.RTF != nil })
	finish := slices.ContainsFunc(reports, func(r *Report) bool { return r.Finish != nil })
	b.WriteString("| run | workload | load | sent | ok | failed | status | req/s |")
	sep := "|---|---|---|---:|---:|---:|---|---:|"
	if steady {
		b.WriteString(" steady req/s |")
		sep += "---:|"
	}
	b.WriteString(" units/s |")
	sep += "---:|"
	if steady {
		b.WriteString(" steady units/s |")
		sep += "---:|"
	}
	b.WriteString(" mean | p50 | p90 | p99 | std | TTFC p50 | TTFC p99 |")
	sep += "---:|---:|---:|---:|---:|---:|---:|"
	if rtf {
		b.WriteString(" RTF p50 | RTF min |")
		sep += "---:|---:|"
	}
	if server {
		b.WriteString(" queue wait | device |")
		sep += "---:|---:|"
	}
	if headers {
		b.WriteString(" queue p50 | queue p99 | device p50 |")
		sep += "---:|---:|---:|"
	}
	if finish {
		b.WriteString(" finish p50 | finish p99 |")
		sep += "---:|---:|"
	}
	b.WriteString("\n" + sep + "\n")
	for _, r := range reports {
		units, steadyRPS, steadyUnits := "-", "-", "-"
		if r.UnitName != "" {
			units = f2(r.UnitsPerS) + " " + r.UnitName
		}
		if r.Steady != nil {
			steadyRPS = f2(r.Steady.RequestsPerS)
			if r.UnitName != "" {
				steadyUnits = f2(r.Steady.UnitsPerS) + " " + r.UnitName
			}
		}
		ttfc50, ttfc99 := "-", "-"
		if r.TTFC != nil {
			ttfc50, ttfc99 = f1(r.TTFC.P50), f1(r.TTFC.P99)
		}
		sent := strconv.Itoa(r.Sent)
		if r.Dropped > 0 {
			sent += fmt.Sprintf(" (+%d dropped)", r.Dropped)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %d | %s | %s |",
			cell(r.Label), cell(workloadString(r.Workload)), r.LoadString(), sent, r.Completed, r.Failed,
			cell(r.StatusString()), f2(r.RequestsPerS))
		if steady {
			fmt.Fprintf(&b, " %s |", steadyRPS)
		}
		fmt.Fprintf(&b, " %s |", units)
		if steady {
			fmt.Fprintf(&b, " %s |", steadyUnits)
		}
		fmt.Fprintf(&b, " %s | %s | %s | %s | %s | %s | %s |",
			f1(r.Latency.Mean), f1(r.Latency.P50), f1(r.Latency.P90), f1(r.Latency.P99), f1(r.Latency.Std),
			ttfc50, ttfc99)
		if rtf {
			if r.RTF != nil {
				fmt.Fprintf(&b, " %s | %s |", f2(r.RTF.P50), f2(r.RTF.Min))
			} else {
				b.WriteString(" - | - |")
			}
		}
		if server {
			if r.Server != nil {
				fmt.Fprintf(&b, " %s | %s |", f1(r.Server.QueueWaitMeanMs), f1(r.Server.DeviceMeanMs))
			} else {
				b.WriteString(" - | - |")
			}
		}
		if headers {
			q50, q99, d50 := "-", "-", "-"
			if r.QueueWait != nil {
				q50, q99 = f1(r.QueueWait.P50), f1(r.QueueWait.P99)
			}
			if r.DeviceTime != nil {
				d50 = f1(r.DeviceTime.P50)
			}
			fmt.Fprintf(&b, " %s | %s | %s |", q50, q99, d50)
		}
		if finish {
			if r.Finish != nil {
				fmt.Fprintf(&b, " %s | %s |", f1(r.Finish.P50), f1(r.Finish.P99))
			} else {
				b.WriteString(" - | - |")
			}
		}
		b.WriteString("\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("bench: write markdown: %w", err)
	}
	return nil
}

func workloadString(s WorkloadSpec) string {
	out := string(s.Kind)
	switch s.Kind {
	case KindImage:
		if s.Images > 1 {
			out += fmt.Sprintf(" x%d", s.Images)
		}
	case KindSpeech:
		words := s.Words
		if words == 0 {
			words = 20
		}
		out += fmt.Sprintf(" %dw", words)
	case KindAudio:
		if s.File != "" {
			out += " file"
		} else {
			secs := s.AudioSeconds
			if secs == 0 {
				secs = 5
			}
			out += " " + strconv.FormatFloat(secs, 'g', -1, 64) + "s"
		}
		if s.Stream {
			out += " stream"
		}
	}
	if s.Path != "" {
		out += " " + s.Path
	}
	return out
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
func f1(x float64) string  { return strconv.FormatFloat(x, 'f', 1, 64) }
func f2(x float64) string  { return strconv.FormatFloat(x, 'f', 2, 64) }
