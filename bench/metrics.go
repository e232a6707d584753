package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Prometheus series the server exports (metrics package) for the queue/device split.
const (
	metricQueueWaitSum   = "tt_media_server_queue_wait_seconds_sum"
	metricQueueWaitCount = "tt_media_server_queue_wait_seconds_count"
	metricDeviceSum      = "tt_media_server_device_seconds_sum"
	metricDeviceCount    = "tt_media_server_device_seconds_count"
)

// ServerTiming is the server's own account of where the measured phase's jobs spent their
// time: the difference of two /metrics scrapes taken just before and just after it.
type ServerTiming struct {
	// Jobs is how many jobs a worker took during the phase.
	Jobs float64 `json:"jobs"`
	// QueueWaitMeanMs is the mean time a job waited in the queue.
	QueueWaitMeanMs float64 `json:"queue_wait_mean_ms"`
	// DeviceMeanMs is the mean time a worker spent on the batch a job was in.
	DeviceMeanMs float64 `json:"device_mean_ms"`
}

// serverTiming computes the split from two scrapes.
func serverTiming(before, after map[string]float64) *ServerTiming {
	d := func(name string) float64 { return after[name] - before[name] }
	t := &ServerTiming{Jobs: d(metricQueueWaitCount)}
	if n := d(metricQueueWaitCount); n > 0 {
		t.QueueWaitMeanMs = d(metricQueueWaitSum) / n * 1000
	}
	if n := d(metricDeviceCount); n > 0 {
		t.DeviceMeanMs = d(metricDeviceSum) / n * 1000
	}
	return t
}

// scrapeMetrics reads GET /metrics and sums the wanted series over all label sets.
func scrapeMetrics(ctx context.Context, cfg *Config) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.BaseURL.JoinPath("/metrics").String(), nil)
	if err != nil {
		return nil, fmt.Errorf("scrape /metrics: %w", err)
	}
	if cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("scrape /metrics: status %d", resp.StatusCode)
	}
	return ParsePromText(resp.Body, metricQueueWaitSum, metricQueueWaitCount, metricDeviceSum, metricDeviceCount)
}

// ParsePromText reads the Prometheus text exposition format and returns, for each wanted
// metric name, the sum of its samples over all label sets (absent names are absent).
func ParsePromText(r io.Reader, names ...string) (map[string]float64, error) {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if !want[name] {
			continue
		}
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				return nil, fmt.Errorf("metrics: malformed line %q", line)
			}
			rest = rest[end+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("metrics: no value in %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: value in %q: %w", line, err)
		}
		out[name] += v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return out, nil
}
