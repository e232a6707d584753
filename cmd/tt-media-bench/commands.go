package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tenstorrent/tt-media-server-go/bench"
)

// targetFlags select a targets file entry.
type targetFlags struct {
	file, model, device string
}

func (t *targetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.file, "targets", "", "targets file (e.g. bench/targets/media.json)")
	fs.StringVar(&t.model, "model", "", "targets: model key (runner name, e.g. tt-sdxl-trace)")
	fs.StringVar(&t.device, "device", "", "targets: device key (e.g. n150, sim)")
}

// check prints the check table for reports and returns errFailedTargets if any failed.
func (t *targetFlags) check(reports []*bench.Report, stdout io.Writer) error {
	if t.file == "" {
		return nil
	}
	if t.model == "" || t.device == "" {
		return errors.New("--targets needs --model and --device")
	}
	f, err := os.Open(t.file)
	if err != nil {
		return fmt.Errorf("targets: %w", err)
	}
	defer f.Close()
	targets, err := bench.LoadTargets(f)
	if err != nil {
		return err
	}
	var checks []bench.CheckResult
	for _, r := range reports {
		c, err := targets.Check(t.model, t.device, r)
		if err != nil {
			return err
		}
		checks = append(checks, c...)
	}
	fmt.Fprintf(stdout, "\nTargets: %s [%s / %s]\n\n", t.file, t.model, t.device)
	if len(checks) == 0 {
		fmt.Fprintln(stdout, "no target entry matches these runs")
		return nil
	}
	ok, err := bench.WriteChecks(stdout, checks)
	if err != nil {
		return err
	}
	if !ok {
		return errFailedTargets
	}
	return nil
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", stderr)
	var lf loadFlags
	var tf targetFlags
	lf.register(fs, true)
	tf.register(fs)
	out := fs.String("out", "", "directory for per-run JSON and sweep.md (created if missing)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	base, err := lf.base()
	if err != nil {
		return err
	}
	cfgs, err := lf.loads(base)
	if err != nil {
		return err
	}
	client := bench.NewClient(max(maxConcurrency(cfgs), 64))
	var reports []*bench.Report
	for _, cfg := range cfgs {
		cfg.Client = client
		fmt.Fprintf(stderr, "running %s %s against %s ...\n", cfg.Label, lf.kind, cfg.BaseURL)
		rep, err := bench.Run(ctx, cfg)
		if err != nil {
			return err
		}
		reports = append(reports, rep)
		if rep.SteadyNote != "" {
			fmt.Fprintf(stderr, "%s: %s\n", rep.Label, rep.SteadyNote)
		}
		if *out != "" {
			if err := writeReport(*out, rep); err != nil {
				return err
			}
		}
	}
	if err := writeSweep(stdout, *out, reports); err != nil {
		return err
	}
	return tf.check(reports, stdout)
}

func maxConcurrency(cfgs []bench.Config) int {
	n := 0
	for _, c := range cfgs {
		n = max(n, c.Concurrency)
	}
	return n
}

func writeReport(dir string, rep *bench.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	name := fmt.Sprintf("bench_%s_%s_%s.json", rep.Workload.Kind, rep.StartedAt.Format("20060102-150405.000"),
		strings.NewReplacer(" ", "_", "/", "", "=", "-", "#", "").Replace(rep.Label))
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := bench.WriteJSON(f, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeSweep prints the Markdown table and, with an output directory, also saves it.
func writeSweep(stdout io.Writer, dir string, reports []*bench.Report) error {
	var b strings.Builder
	if err := bench.WriteMarkdown(&b, reports); err != nil {
		return err
	}
	fmt.Fprint(stdout, b.String())
	if dir == "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "sweep.md"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

func cmdCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("compare", stderr)
	var lf loadFlags
	lf.register(fs, true)
	baselineURL := fs.String("baseline-url", "", "the bare handler's root URL (see the bare command)")
	rounds := fs.Int("rounds", 2, "alternating rounds per side")
	out := fs.String("out", "", "directory for the comparison JSON, per-run JSON and sweep.md")
	if err := fs.Parse(args); err != nil {
		return err
	}
	base, err := lf.base()
	if err != nil {
		return err
	}
	baseline, err := bench.CheckTarget(*baselineURL, lf.allowRemote)
	if err != nil {
		return fmt.Errorf("--baseline-url: %w", err)
	}
	cfgs, err := lf.loads(base)
	if err != nil {
		return err
	}
	if len(cfgs) != 1 {
		return errors.New("compare takes one load (one --concurrency or --rate value)")
	}
	cfg := cfgs[0]
	cfg.Client = bench.NewClient(max(cfg.Concurrency, 64))
	cmp, err := bench.Compare(ctx, cfg, baseline, *rounds)
	if err != nil {
		return err
	}
	all := append(append([]*bench.Report{}, cmp.Server...), cmp.Baseline...)
	if *out != "" {
		for _, r := range all {
			if err := writeReport(*out, r); err != nil {
				return err
			}
		}
		data, err := json.MarshalIndent(cmp, "", "  ")
		if err != nil {
			return fmt.Errorf("compare: %w", err)
		}
		if err := os.WriteFile(filepath.Join(*out, "compare.json"), data, 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	if err := writeSweep(stdout, *out, all); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nserver %.1f req/s, bare %.1f req/s, ratio %.3f (%s, %s)\n",
		cmp.ServerRPS, cmp.BaselineRPS, cmp.Ratio, lf.kind, cfg.Label)
	return nil
}

func cmdBare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bare", stderr)
	var lf loadFlags
	lf.register(fs, false)
	listen := fs.String("listen", "127.0.0.1:0", "loopback address to serve on")
	ready := fs.Duration("wait", 30*time.Second, "how long to wait for --url to become live before recording")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if !bench.IsLoopbackHost(host) && !lf.allowRemote {
		return fmt.Errorf("--listen %s: %w", *listen, bench.ErrRemoteTarget)
	}
	base, err := lf.base()
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, *ready)
	err = bench.WaitReady(wctx, nil, base.BaseURL, "/tt-liveness")
	cancel()
	if err != nil {
		return err
	}
	canned, err := bench.Record(ctx, base)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	srv := &http.Server{Handler: bench.BareHandler(canned), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "bare: serving %d bytes (%s, status %d) on http://%s\n", len(canned.Body), canned.ContentType, canned.Status, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("bare: %w", err)
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("bare: shutdown: %w", err)
	}
	return nil
}

func cmdCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", stderr)
	var tf targetFlags
	tf.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if tf.file == "" || fs.NArg() == 0 {
		return errors.New("usage: tt-media-bench check --targets FILE --model M --device D REPORT.json [REPORT.json ...]")
	}
	reports, err := readReports(fs.Args())
	if err != nil {
		return err
	}
	return tf.check(reports, stdout)
}

// cmdReport prints the Markdown sweep table of saved per-run JSON reports.
func cmdReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: tt-media-bench report REPORT.json [REPORT.json ...]")
	}
	reports, err := readReports(fs.Args())
	if err != nil {
		return err
	}
	return bench.WriteMarkdown(stdout, reports)
}

func readReports(paths []string) ([]*bench.Report, error) {
	var reports []*bench.Report
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("read report: %w", err)
		}
		r, err := bench.ReadJSON(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		reports = append(reports, r)
	}
	return reports, nil
}
