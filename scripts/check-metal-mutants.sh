#!/usr/bin/env bash
# check-metal-mutants.sh BUILD SDK: shows that a wrong call in the metal backend is caught — by the
# compiler against tt-mlir's real declarations, or at run time by the fake tt::runtime. Each mutant
# is a patched COPY of ttnn/ (in BUILD/mutants, never in the repository) built with -tags ttnn and
# run through the conformance suite; the script fails if a mutant is NOT caught with the expected
# message. Go mutants (gomutant) patch a runner's metal path instead, through `go test -overlay`,
# and that runner's metal test must catch them. Called by scripts/check-metal.sh with its build
# directory (CGO_* already exported).
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

# gomutant NAME FILE SED-EXPRESSION PACKAGE TEST EXPECTED-TEXT: a patched copy of FILE (a runner's
# Go code on the metal path) handed to `go test -overlay` (the repository is not touched); PACKAGE's
# TEST (-tags ttnn, over the fake) must fail with EXPECTED-TEXT.
gomutant() {
	local name=$1 file=$2 expr=$3 pkg=$4 test=$5 want=$6 dir out rc
	n=$((n + 1))
	dir=$work/m$n
	mkdir -p "$dir"
	sed "$expr" "$file" >"$dir/$(basename "$file")"
	if cmp -s "$file" "$dir/$(basename "$file")"; then
		echo "check-metal-mutants: mutant '$name' did not apply ($file changed?)" >&2
		exit 1
	fi
	printf '{"Replace":{"%s":"%s"}}\n' "$PWD/$file" "$dir/$(basename "$file")" >"$dir/overlay.json"
	set +e
	out=$(go test -tags ttnn -count=1 -overlay "$dir/overlay.json" -run "^$test\$" "$pkg" 2>&1)
	rc=$?
	set -e
	if [ $rc -eq 0 ] || ! grep -qF -- "$want" <<<"$out"; then
		echo "check-metal-mutants: mutant NOT caught: $name (exit $rc, want \"$want\")" >&2
		echo "$out" | tail -40 >&2
		exit 1
	fi
	echo "== check-metal: mutant caught by $test: $name:"
	grep -m1 -F -- "$want" <<<"$out" | sed 's/^[[:space:]]*/     /' | cut -c1-240
}

# Wan2.2 T2V on metal (runners/wan/t2v TestMetalWan: what the fake received for a short clip).
gomutant "Wan: the unconditional run conditioned on the prompt (CFG collapsed)" runners/wan/t2v/pipeline.go \
	's|u, err := p.dev.Transformer(ctx, expert, in, t, uncond)|u, err := p.dev.Transformer(ctx, expert, in, t, cond); _ = uncond|' \
	./runners/wan/t2v/ TestMetalWan "conditional, then unconditional (CFG)"
gomutant "Wan: one expert for every step (the boundary timestep ignored)" runners/wan/t2v/pipeline.go \
	's|expert, scale := g.Pick(t, p.cfg.Sampler.NumTrainTimesteps)|_, scale := g.Pick(t, p.cfg.Sampler.NumTrainTimesteps); expert := HighNoise|' \
	./runners/wan/t2v/ TestMetalWan "wan22-t2v-transformer-2.ttnn"
gomutant "Wan: .ttnn programs loaded without the declaration check" runners/wan/t2v/ttnndevice_metal.go \
	's|if err := specs\[i\].Check(path, prog.Functions()); err != nil {|if err := error(nil); err != nil {|' \
	./runners/wan/t2v/ TestMetalWan "the worker fails at once instead of retrying"
gomutant "Wan: the timestep written as an integer (the program takes f32)" runners/wan/t2v/ttnndevice.go \
	's|binary.LittleEndian.PutUint32(ts, math.Float32bits(float32(t)))|binary.LittleEndian.PutUint32(ts, uint32(t))|' \
	./runners/wan/t2v/ TestMetalWan "the schedule's timestep as f32"
rm -rf "$work"
