package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Canned is one recorded response: what the bare baseline handler answers.
type Canned struct {
	Status      int
	ContentType string
	Body        []byte
}

// Record sends request 0 of cfg's workload to cfg.BaseURL and returns the response, so that a
// bare handler can answer the very same bytes. A non-2xx answer is an error.
func Record(ctx context.Context, cfg Config) (*Canned, error) {
	if cfg.BaseURL == nil || cfg.Workload == nil {
		return nil, fmt.Errorf("%w: record needs a target and a workload", ErrConfig)
	}
	if cfg.Client == nil {
		cfg.Client = NewClient(2)
	}
	w := cfg.Workload
	var body io.Reader
	if b := w.Body(0); b != nil {
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, w.Method, cfg.BaseURL.JoinPath(w.Path).String(), body)
	if err != nil {
		return nil, fmt.Errorf("bench: record: %w", err)
	}
	if w.ContentType != "" {
		req.Header.Set("Content-Type", w.ContentType)
	}
	if w.Auth && cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("bench: record: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("bench: record: read body: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("bench: record: %s answered %d: %.200s", req.URL, resp.StatusCode, data)
	}
	return &Canned{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: data}, nil
}

// BareHandler is the baseline of the server-path benchmark: a plain net/http handler that
// reads the whole request body, echoes X-Request-Id, and answers the canned bytes. Whatever
// the server spends beyond this is its own overhead.
func BareHandler(c *Canned) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		if c.ContentType != "" {
			h.Set("Content-Type", c.ContentType)
		}
		if id := r.Header.Get("X-Request-Id"); id != "" {
			h.Set("X-Request-Id", id)
		}
		w.WriteHeader(c.Status)
		_, _ = w.Write(c.Body)
	})
}

// Comparison is the server-path benchmark: the same workload and client against the server
// and against a baseline, alternating in rounds so drift hits both alike.
type Comparison struct {
	Server   []*Report `json:"server"`
	Baseline []*Report `json:"baseline"`
	// ServerRPS and BaselineRPS are completed requests over total measured time per side.
	ServerRPS   float64 `json:"server_requests_per_s"`
	BaselineRPS float64 `json:"baseline_requests_per_s"`
	// Ratio is ServerRPS / BaselineRPS.
	Ratio float64 `json:"ratio"`
}

// Compare runs cfg against cfg.BaseURL and against baseline in turn, rounds times each,
// with one shared client.
func Compare(ctx context.Context, cfg Config, baseline *url.URL, rounds int) (*Comparison, error) {
	if rounds <= 0 {
		return nil, fmt.Errorf("%w: rounds must be > 0", ErrConfig)
	}
	if cfg.Client == nil {
		cfg.Client = NewClient(max(cfg.Concurrency, cfg.MaxInFlight, 64))
	}
	server := cfg.BaseURL
	label := cfg.Label
	cmp := &Comparison{}
	var sTime, bTime float64
	var sDone, bDone int
	for i := range rounds {
		for _, side := range []struct {
			u    *url.URL
			name string
		}{{server, "server"}, {baseline, "bare"}} {
			c := cfg
			c.BaseURL = side.u
			c.Label = fmt.Sprintf("%s%s #%d", prefix(label), side.name, i+1)
			rep, err := Run(ctx, c)
			if err != nil {
				return nil, fmt.Errorf("%s round %d: %w", side.name, i+1, err)
			}
			if side.name == "server" {
				cmp.Server = append(cmp.Server, rep)
				sTime += rep.DurationS
				sDone += rep.Completed
			} else {
				cmp.Baseline = append(cmp.Baseline, rep)
				bTime += rep.DurationS
				bDone += rep.Completed
			}
		}
	}
	if sTime > 0 {
		cmp.ServerRPS = float64(sDone) / sTime
	}
	if bTime > 0 {
		cmp.BaselineRPS = float64(bDone) / bTime
	}
	if cmp.BaselineRPS > 0 {
		cmp.Ratio = cmp.ServerRPS / cmp.BaselineRPS
	}
	return cmp, nil
}

func prefix(label string) string {
	if label == "" {
		return ""
	}
	return label + " "
}

// WaitReady polls GET base+path until it answers 200 or ctx ends.
func WaitReady(ctx context.Context, client *http.Client, base *url.URL, path string) error {
	if client == nil {
		client = NewClient(2)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.JoinPath(path).String(), nil)
		if err != nil {
			return fmt.Errorf("bench: wait ready: %w", err)
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: %s%s not ready: %w", base, path, context.Cause(ctx))
		case <-tick.C:
		}
	}
}
