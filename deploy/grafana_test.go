package deploy

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type grafanaDashboard struct {
	Title      string         `json:"title"`
	UID        string         `json:"uid"`
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

var (
	opsMetricRE  = regexp.MustCompile("`(tt_media_server_[a-z0-9_]+)`(?:\\s*/\\s*`(_[a-z0-9_]+)`)?")
	exprMetricRE = regexp.MustCompile(`\b(tt_media_server_[a-z0-9_]+|go_[a-z0-9_]+|process_[a-z0-9_]+)\b`)
)

// documentedMetrics reads the metric table of docs/OPERATIONS.md: name -> type. A row
// "`a_queue_depth` / `_queue_capacity`" documents tt_media_server_queue_depth and
// tt_media_server_queue_capacity.
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	doc := string(readRepoFile(t, "docs/OPERATIONS.md"))
	out := map[string]string{}
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "| `tt_media_server_") {
			continue
		}
		cells := strings.Split(line, "|")
		require.GreaterOrEqual(t, len(cells), 4, line)
		typ := strings.TrimSpace(cells[2])
		m := opsMetricRE.FindStringSubmatch(cells[1])
		require.NotNil(t, m, line)
		out[m[1]] = typ
		if m[2] != "" {
			out["tt_media_server"+m[2]] = typ
		}
	}
	require.GreaterOrEqual(t, len(out), 10, "docs/OPERATIONS.md metric table not found")
	return out
}

func TestGrafanaDashboard(t *testing.T) {
	raw := readRepoFile(t, "deploy/grafana/tt-media-server.json")
	var d grafanaDashboard
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	require.NoError(t, dec.Decode(&d))
	require.Equal(t, "tt-media-server", d.UID)

	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
	}
	require.Subset(t, vars, []string{"datasource", "job", "instance", "model"})

	documented := documentedMetrics(t)
	used := map[string]bool{}
	ids := map[int]bool{}
	type cell struct{ x, y int }
	occupied := map[cell]string{}
	for _, p := range d.Panels {
		require.False(t, ids[p.ID], "duplicate panel id %d", p.ID)
		ids[p.ID] = true
		require.LessOrEqual(t, p.GridPos.X+p.GridPos.W, 24, p.Title)
		for x := p.GridPos.X; x < p.GridPos.X+p.GridPos.W; x++ {
			for y := p.GridPos.Y; y < p.GridPos.Y+p.GridPos.H; y++ {
				if other, ok := occupied[cell{x, y}]; ok {
					t.Fatalf("panels %q and %q overlap", p.Title, other)
				}
				occupied[cell{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		require.Equal(t, "timeseries", p.Type, p.Title)
		require.NotNil(t, p.Datasource, p.Title)
		require.Equal(t, "${datasource}", p.Datasource.UID, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			require.Equal(t, strings.Count(tg.Expr, "("), strings.Count(tg.Expr, ")"), "unbalanced: %s", tg.Expr)
			require.Equal(t, strings.Count(tg.Expr, "{"), strings.Count(tg.Expr, "}"), "unbalanced: %s", tg.Expr)
			for _, m := range exprMetricRE.FindAllString(tg.Expr, -1) {
				if !strings.HasPrefix(m, "tt_media_server_") {
					used[m] = true
					continue
				}
				base, suffix := m, ""
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					if strings.HasSuffix(m, s) {
						base, suffix = strings.TrimSuffix(m, s), s
					}
				}
				typ, ok := documented[base]
				require.True(t, ok, "panel %q uses %s, which docs/OPERATIONS.md does not document", p.Title, m)
				if suffix == "_bucket" {
					require.Equal(t, "histogram", typ, "%s: histogram_quantile over a %s", m, typ)
					require.Contains(t, tg.Expr, "histogram_quantile(", p.Title)
					require.Contains(t, tg.Expr, "le", p.Title)
				}
				if typ == "counter" {
					require.Regexp(t, `(rate|increase)\(`+m+`\{`, tg.Expr, "counter %s must be rated", m)
				}
				if typ == "histogram" {
					require.NotEmpty(t, suffix, "histogram %s used without _bucket/_sum/_count", m)
				}
				used[base] = true
			}
		}
	}
	for name := range documented {
		require.True(t, used[name], "documented metric %s has no panel", name)
	}
	for _, m := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		require.True(t, used[m], "runtime panel for %s", m)
	}
	keys := make([]string, 0, len(used))
	for k := range used {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	t.Logf("dashboard uses %d metrics: %s", len(keys), strings.Join(keys, ", "))
}
