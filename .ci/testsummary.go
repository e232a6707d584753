//go:build ignore

// testsummary reads `go test -json` on stdin and prints what a plain `go test` prints for a CI
// log — each package's closing line (ok / FAIL / no test files), the full output of every failed
// test, build errors — then a summary of every skipped test with its reason, and a closing line
// "N passed, N failed, N skipped". It exits 1 when a test failed, the run did not finish, or a
// test skipped whose reason is not allowed by the file named with -allow (one Go regexp a line,
// matched against "pkg TestName: reason"; # starts a comment): in CI a missing reference tool
// or golden must fail the run, not skip silently.
//
//	go test -json ./... 2>&1 | go run .ci/testsummary.go -allow .ci/allowed-skips.txt
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type key struct{ pkg, test string }

// logLine is a t.Log / t.Skip line as go test prints it: "    file_test.go:12: message".
var logLine = regexp.MustCompile(`^\s+\S+\.go:\d+: `)

func main() {
	allowFile := flag.String("allow", "", "file of regexps (one a line) for skips allowed in this run")
	flag.Parse()
	var allowed []*regexp.Regexp
	if *allowFile != "" {
		data, err := os.ReadFile(*allowFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsummary:", err)
			os.Exit(2)
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			allowed = append(allowed, regexp.MustCompile(line))
		}
	}

	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	buf := map[key][]string{} // output of running tests, printed only when they fail
	skipReason := map[key]string{}
	var skipped []key
	passed, failed, pkgFailed, started, ended := 0, 0, 0, map[string]bool{}, map[string]bool{}

	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			fmt.Fprintln(out, string(line)) // not go test's JSON (e.g. a tool's stderr): as is
			continue
		}
		k := key{ev.Package, ev.Test}
		switch ev.Action {
		case "start":
			started[ev.Package] = true
		case "build-output":
			fmt.Fprint(out, ev.Output)
		case "output":
			if ev.Test == "" {
				// Package-level lines: "ok  pkg 1.2s", "FAIL", panics, build failures. The
				// verbose "=== RUN"-style lines of test2json's own are left out.
				if !strings.HasPrefix(ev.Output, "=== ") && strings.TrimSpace(ev.Output) != "PASS" {
					fmt.Fprint(out, ev.Output)
				}
				continue
			}
			buf[k] = append(buf[k], ev.Output)
			if logLine.MatchString(ev.Output) {
				skipReason[k] = strings.TrimSpace(ev.Output) // the last logged line before a skip is its reason
			}
		case "pass":
			if ev.Test == "" {
				ended[ev.Package] = true
			} else {
				passed++
			}
			delete(buf, k)
		case "skip":
			if ev.Test == "" {
				ended[ev.Package] = true
				continue
			}
			skipped = append(skipped, k)
			delete(buf, k)
		case "fail":
			if ev.Test == "" {
				ended[ev.Package] = true
				pkgFailed++
				continue
			}
			failed++
			for _, o := range buf[k] {
				fmt.Fprint(out, o)
			}
			delete(buf, k)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(out, "testsummary: reading go test -json:", err)
		pkgFailed++
	}

	bad := 0
	if len(skipped) > 0 {
		sort.Slice(skipped, func(i, j int) bool {
			if skipped[i].pkg != skipped[j].pkg {
				return skipped[i].pkg < skipped[j].pkg
			}
			return skipped[i].test < skipped[j].test
		})
		fmt.Fprintf(out, "\nskipped tests (%d):\n", len(skipped))
		for _, k := range skipped {
			desc := fmt.Sprintf("%s %s: %s", k.pkg, k.test, skipReason[k])
			mark := "  "
			if !matchesAny(allowed, desc) {
				mark = "! "
				bad++
			}
			fmt.Fprintln(out, mark+desc)
		}
		if bad > 0 {
			fmt.Fprintf(out, "%d skip(s) marked ! are not allowed in this run (see the -allow file): a missing tool or golden must be installed by .ci/run\n", bad)
		}
	}
	unfinished := 0
	for p := range started {
		if !ended[p] {
			unfinished++
			fmt.Fprintf(out, "FAIL %s: no closing result (crashed or timed out)\n", p)
		}
	}
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", passed, failed, len(skipped))
	out.Flush()
	if failed > 0 || pkgFailed > 0 || bad > 0 || unfinished > 0 {
		os.Exit(1)
	}
}

func matchesAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}
