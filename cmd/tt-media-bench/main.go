// Command tt-media-bench is the load tool for tt-media-server: concurrency sweeps and
// fixed-rate open-loop runs against the media routes, per-run JSON and a Markdown sweep
// table, pass/fail against a targets file, and the server-path benchmark (the server versus
// a bare net/http handler answering the same bytes).
//
//	tt-media-bench run     --kind image --concurrency 1,2,4,8 --duration 10s --out results/
//	tt-media-bench run     --kind audio --stream --rate 5,10 --arrival poisson --requests 200
//	tt-media-bench run     --kind speech --words 200 --concurrency 1 --requests 5   (time to first audio, real-time factor)
//	tt-media-bench run     --kind video --steps 10 --rate 0.8 --arrival poisson --duration 2m   (jobs: submit → completed)
//	tt-media-bench bare    --listen 127.0.0.1:9001 --url http://127.0.0.1:8000 --kind image
//	tt-media-bench compare --url http://127.0.0.1:8000 --baseline-url http://127.0.0.1:9001 --kind image --concurrency 8
//	tt-media-bench check   --targets bench/targets/media.json --model tt-sdxl-trace --device n150 results/*.json
//	tt-media-bench report  results/*.json
//
// Targets must be loopback unless --allow-remote is given.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// errFailedTargets makes the exit status non-zero when a target check fails.
var errFailedTargets = errors.New("one or more targets failed")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "tt-media-bench:", err)
		os.Exit(1)
	}
}

const usage = `usage: tt-media-bench <command> [flags]

commands:
  run      drive the server: closed-loop sweep (--concurrency 1,2,4) or open loop (--rate 5,10)
  compare  server-path benchmark: the same load against --url and --baseline-url, alternating
  bare     serve the bytes of one recorded server response from a plain net/http handler
  check    check per-run JSON reports against a targets file
  report   print the Markdown sweep table of per-run JSON reports

run "tt-media-bench <command> -h" for the flags of a command.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command")
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "compare":
		return cmdCompare(ctx, args[1:], stdout, stderr)
	case "bare":
		return cmdBare(ctx, args[1:], stdout, stderr)
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "report":
		return cmdReport(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
