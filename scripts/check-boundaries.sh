#!/usr/bin/env bash
# check-boundaries.sh: the package boundaries of docs/DEVELOPERS.md, proved with `go list` on
# the real import graph (.ci/run and `make lint` run it next to golangci-lint, whose depguard
# cannot see cgo's import "C": cgo files reach the linters already translated).
#   * cgo only in ttnn/ and media/ (packages with CgoFiles);
#   * gin only in server/ (direct imports);
#   * runners/catalogue imports nothing of the module (config and runners both derive from it);
#   * no package imports a runner hub: runners/<family> packages are imported by the families'
#     registry, the server binary and tests only, never by one another's simulated runners;
#   * no two packages share a name (other than main): a family's runner, host pipeline and
#     tokenizer packages are <family>runner, <family>pipeline, <family>tokenizer;
#   * no non-test Go file over 500 lines (split by responsibility, not arbitrarily).
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
fail=0

cgo=$(go list -f '{{if .CgoFiles}}{{.ImportPath}}{{end}}' ./... | grep -v -E "^$mod/(ttnn|media)(/|$)" || true)
if [ -n "$cgo" ]; then
	echo "cgo outside ttnn/ and media/:"; echo "$cgo" | sed 's/^/  /'; fail=1
fi

gin=$(go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./... |
	awk -v mod="$mod" '$1 !~ "^"mod"/server$" { for (i = 2; i <= NF; i++) if ($i ~ /^github.com\/gin-gonic\//) print $1 }' | sort -u)
if [ -n "$gin" ]; then
	echo "gin imported outside server/:"; echo "$gin" | sed 's/^/  /'; fail=1
fi

hub=$(go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}' ./... |
	awk -v mod="$mod" '{ for (i = 2; i <= NF; i++) if ($i == mod"/runners/mock") print $1 }' | sort -u)
if [ -n "$hub" ]; then
	echo "packages importing the old runners/mock hub:"; echo "$hub" | sed 's/^/  /'; fail=1
fi

leaf=$(go list -f '{{range .Imports}}{{.}} {{end}}' ./runners/catalogue | tr ' ' '\n' | grep "^$mod/" || true)
if [ -n "$leaf" ]; then
	echo "runners/catalogue must be a leaf (config and runners import it); it imports:"; echo "$leaf" | sed 's/^/  /'; fail=1
fi

dup=$(go list -f '{{.Name}}' ./... | grep -v -x main | sort | uniq -d)
if [ -n "$dup" ]; then
	echo "package names used twice (docs/DEVELOPERS.md: a family's runner/pipeline/tokenizer is <family>runner, ...):"
	for n in $dup; do go list -f '{{.Name}} {{.ImportPath}}' ./... | awk -v n="$n" '$1 == n { print "  " $0 }'; done
	fail=1
fi

long=$(git ls-files --cached --others --exclude-standard '*.go' ':!:*_test.go' | xargs wc -l | awk '$2 != "total" && $1 > 500 { print "  " $2 " (" $1 " lines)" }')
if [ -n "$long" ]; then
	echo "non-test Go files over 500 lines (docs/DEVELOPERS.md):"; echo "$long"; fail=1
fi

if [ "$fail" = 0 ]; then
	echo "boundaries: cgo only in ttnn/ and media/ ($(go list -f '{{if .CgoFiles}}{{.ImportPath}}{{end}}' ./... | grep -c .) packages), gin only in server/, no runners/mock, runners/catalogue a leaf, no package name used twice, no non-test Go file over 500 lines"
fi
exit "$fail"
