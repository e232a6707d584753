#!/usr/bin/env bash
# check-metal-mutants.sh BUILD SDK: shows that a wrong call in the metal backend is caught — by the
# compiler against tt-mlir's real declarations, or at run time by the fake tt::runtime. Each mutant
# is a patched COPY of ttnn/ (in BUILD/mutants, never in the repository) built with -tags ttnn and
# run through the conformance suite; the script fails if a mutant is NOT caught with the expected
# message. Called by scripts/check-metal.sh with its build directory (CGO_* already exported).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1 sdk=$2
work=$build/mutants
rm -rf "$work"
mkdir -p "$work/shared"
ln -s "$sdk" "$work/shared/tt-mlir-sdk" # ttnnfile.SDKDir() is ../shared/tt-mlir-sdk beside the module

n=0
# mutant NAME SED-EXPRESSION compile|run EXPECTED-TEXT
mutant() {
	local name=$1 expr=$2 how=$3 want=$4 dir out rc
	n=$((n + 1))
	dir=$work/m$n
	mkdir -p "$dir"
	cp go.mod go.sum "$dir/"
	cp -r ttnn "$dir/ttnn"
	sed -i "$expr" "$dir/ttnn/ttb_metal.cc"
	if cmp -s ttnn/ttb_metal.cc "$dir/ttnn/ttb_metal.cc"; then
		echo "check-metal-mutants: mutant '$name' did not apply (ttb_metal.cc changed?)" >&2
		exit 1
	fi
	set +e
	if [ "$how" = compile ]; then
		out=$(cd "$dir" && go build -tags ttnn ./ttnn/ 2>&1)
	else
		out=$(cd "$dir" && go test -tags ttnn -count=1 -run '^TestConformance$/^metal$' ./ttnn/ 2>&1)
	fi
	rc=$?
	set -e
	if [ $rc -eq 0 ] || ! grep -qF -- "$want" <<<"$out"; then
		echo "check-metal-mutants: mutant NOT caught: $name (exit $rc, want \"$want\")" >&2
		echo "$out" | tail -40 >&2
		exit 1
	fi
	echo "== check-metal: mutant caught by the $how: $name:"
	grep -m1 -F -- "$want" <<<"$out" | sed 's/^[[:space:]]*/     /' | cut -c1-240
}

mutant "wrong argument type (a Binary where toLayout takes a Layout)" \
	's|rt::toLayout(t->host, \*d->dev, l, /\*retain=\*/true)|rt::toLayout(t->host, *d->dev, p->bin, /*retain=*/true)|' \
	compile "could not convert"
mutant "freed tensor reused (a consumed input neither refused nor forgotten)" \
	's/ || t->consumed) return ttb_fail(TTB_INVALID_ARGUMENT, "input %u/) return ttb_fail(TTB_INVALID_ARGUMENT, "input %u/; s/^        in\[i\]->onDev.reset();//' \
	run "is not allocated (it was deallocated)"
mutant "wrong layout (an input laid out as the next input wants it)" \
	's|rt::Layout l = rt::getLayout(p->bin, fn, i);|rt::Layout l = rt::getLayout(p->bin, fn, (i + 1) % n_in);|' \
	run "the program expects Float32 tile in DRAM"
mutant "tensor on the wrong submesh (laid out on the open parent mesh)" \
	's|rt::toLayout(t->host, \*d->dev, l, /\*retain=\*/true)|rt::toLayout(t->host, *g_open->dev, l, /*retain=*/true)|' \
	run "the program runs on submesh"
rm -rf "$work"
