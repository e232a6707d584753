#!/usr/bin/env bash
# Host media benchmarks of issue 17, side by side with Pillow / the Python reference in ONE run
# (never against figures from another day), printing ratios:
#
#   1. decode + ResNet preprocessing at 500x375, 1920x1080, 4032x3024 JPEGs, one core:
#      exact mode vs PIL (Image.open, convert('RGB'), resize 256 bilinear, centre crop 224,
#      to tensor, normalise: what torchvision does), fast mode (CNN_FAST_PREPROCESS) vs PIL with
#      Image.draft('RGB', (256, 256)); and fast mode's difference from the exact tensor;
#   2. JPEG (q85) and WebP (q85) encode of a 1024² photo-like and a solid image vs Pillow;
#   3. the whole POST /cnn/search-image route with the server pinned to one core (hey on
#      another) vs PIL's preprocessing alone on that core, at 1920x1080 and 500x375;
#   4. P3: /image/generations (MOCK_IMAGE=solid: the Python mock's image), /cnn/search-image and
#      /tt-liveness against the Python reference server in mock mode (4 workers, zero inference
#      time, hey), each on the whole box — needs PYREF from scripts/setup-python-reference.sh.
#      The CNN rows are work-equal: the Python mock decodes and preprocesses each image with PIL
#      as HEAD's Forge runner does (MOCK_CNN_PREPROCESS, setup-python-reference.sh), and both
#      servers' CPU time per request (all their processes) is printed beside req/s.
#
#   scripts/bench-imaging.sh                      # all parts
#   PARTS="preprocess encode" scripts/bench-imaging.sh
#   CORE=1 LOADCORE=0 DURATION=10s PYREF=~/.cache/tt-media-server-go/python-reference scripts/bench-imaging.sh
#   PARTS=p3 P3_IMAGE=0 scripts/bench-imaging.sh  # the work-equal CNN comparison alone
#
# Per-core timings are each thread's CPU time (Go: CLOCK_THREAD_CPUTIME_ID, Python:
# time.thread_time), median of N runs, both under `taskset -c $CORE`: robust to the other
# processes of a shared box, but note in any figure that the box was shared. Requires Debian
# python3-pil, python3-numpy, hey (installed when missing, as root) and the native codecs
# (scripts/install-codecs.sh). Fixtures are generated (deterministic) into $OUT.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PARTS=${PARTS:-"preprocess encode route p3"}
CORE=${CORE:-1}
LOADCORE=${LOADCORE:-0}
N=${N:-15}
DURATION=${DURATION:-10s}
PYREF=${PYREF:-$HOME/.cache/tt-media-server-go/python-reference}
P3_IMAGE=${P3_IMAGE:-1} # 0: P3 runs the CNN rows only
PY=${PY:-/usr/bin/python3} # Debian's python3 with python3-pil / python3-numpy
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/bench-imaging.XXXXXX")}
mkdir -p "$OUT"
echo "results in $OUT; box: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) (shared: figures are ratios measured side by side)" >&2

"$ROOT/scripts/apt-ensure.sh" hey
"$ROOT/scripts/install-codecs.sh" >&2
$PY -c 'import PIL, numpy' 2>/dev/null || apt-get install -y -qq --no-install-recommends python3-pil python3-numpy >/dev/null
echo "Pillow $($PY -c 'import PIL; print(PIL.__version__)')" >&2

(cd "$ROOT" && go build -o "$OUT/imagingbench" ./scripts/imagingbench && go build -o "$OUT/tt-media-server" ./cmd/tt-media-server)

PIDS=()
cleanup() {
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# Fixtures: photo-like JPEGs (gradients, band-limited texture, noise, shapes; quality 90, 4:2:0,
# as a camera or a browser writes them) and a 1024² PNG to encode.
cat >"$OUT/pil.py" <<'PYEOF'
import io, sys, time, statistics
import numpy as np
from PIL import Image, ImageDraw

def photo(w, h, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.stack([128 + 100*np.sin(x/w*6 + y/h*2), 128 + 100*np.cos(y/h*5 - x/w*3), 128 + 90*np.sin((x+y)/(w+h)*9)], -1)
    n = rng.normal(0, 1, (h//4+1, w//4+1, 3)).astype(np.float32)
    n = np.array(Image.fromarray(np.clip(n*40+128, 0, 255).astype(np.uint8)).resize((w, h), Image.BICUBIC), np.float32) - 128
    img = img + n*0.8 + rng.normal(0, 6, img.shape)
    im = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))
    d = ImageDraw.Draw(im)
    for _ in range(40):
        x0, y0, s = int(rng.integers(0, w)), int(rng.integers(0, h)), int(rng.integers(w//40+1, w//6+2))
        d.ellipse([x0, y0, x0+s, y0+s*2//3], fill=tuple(int(v) for v in rng.integers(0, 256, 3)))
    return im

MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)

def preprocess(data, draft):
    im = Image.open(io.BytesIO(data))
    if draft:
        im.draft('RGB', (256, 256))
    im = im.convert('RGB')
    w, h = im.size
    nw, nh = (256, int(256*h/w)) if w <= h else (int(256*w/h), 256)
    im = im.resize((nw, nh), Image.BILINEAR)
    l, t = int(round((nw-224)/2.0)), int(round((nh-224)/2.0))
    x = np.asarray(im.crop((l, t, l+224, t+224)), np.float32).transpose(2, 0, 1) / 255
    return (x - MEAN) / STD

def median_ms(n, f):
    f()
    ts = []
    for _ in range(n):
        t0 = time.thread_time(); f(); ts.append((time.thread_time()-t0)*1e3)
    return statistics.median(ts)

cmd = sys.argv[1]
if cmd == 'fixtures':
    out = sys.argv[2]
    for w, h in [(224, 224), (500, 375), (1920, 1080), (4032, 3024)]:
        photo(w, h, w).save(f'{out}/photo_{w}x{h}.jpg', quality=90)
    photo(1024, 1024, 7).save(f'{out}/photo_1024.png')
    Image.new('RGB', (1024, 1024), (120, 60, 200)).save(f'{out}/solid_1024.png')
elif cmd == 'preprocess':
    n = int(sys.argv[2])
    for f in sys.argv[3:]:
        data = open(f, 'rb').read()
        print(f.rsplit('/', 1)[-1], '%.3f' % median_ms(n, lambda: preprocess(data, False)), '%.3f' % median_ms(n, lambda: preprocess(data, True)))
elif cmd == 'encode':
    n, fmt, q = int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    for f in sys.argv[5:]:
        im = Image.open(f).convert('RGB'); im.load()
        size = [0]
        def enc():
            b = io.BytesIO(); im.save(b, fmt, quality=q); size[0] = b.tell()
        print(f.rsplit('/', 1)[-1], '%.3f' % median_ms(n, enc), size[0])
PYEOF
$PY "$OUT/pil.py" fixtures "$OUT"
PHOTOS="$OUT/photo_500x375.jpg $OUT/photo_1920x1080.jpg $OUT/photo_4032x3024.jpg"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
on_core() { taskset -c "$CORE" "$@"; }

declare -A PIL_EXACT
if [[ " $PARTS " == *" preprocess "* || " $PARTS " == *" route "* ]]; then
	on_core $PY "$OUT/pil.py" preprocess "$N" $PHOTOS >"$OUT/pil_preprocess.txt"
	while read -r f e d; do PIL_EXACT[$f]=$e; done <"$OUT/pil_preprocess.txt"
fi
if [[ " $PARTS " == *" preprocess "* ]]; then
	on_core "$OUT/imagingbench" preprocess -n "$N" $PHOTOS >"$OUT/go_exact.txt"
	on_core "$OUT/imagingbench" preprocess -fast -n "$N" $PHOTOS >"$OUT/go_fast.txt"
	"$OUT/imagingbench" diff $PHOTOS >"$OUT/fast_diff.txt"
	echo
	echo "## 1. decode + ResNet preprocessing, one core (core $CORE), thread CPU ms, median of $N"
	echo "| image | PIL exact | ours exact | ratio | PIL draft | ours fast | ratio | fast vs exact tensor |"
	echo "|---|---|---|---|---|---|---|---|"
	while read -r f pe pd; do
		ge=$(awk -v f="$f" '$1 == f {print $2}' "$OUT/go_exact.txt")
		gf=$(awk -v f="$f" '$1 == f {print $2}' "$OUT/go_fast.txt")
		df=$(awk -v f="$f" '$1 == f {print "max " $4 " levels, mean " $8 " levels"}' "$OUT/fast_diff.txt" | tr -d '(')
		echo "| $f | $pe | $ge | $(ratio "$pe" "$ge")x | $pd | $gf | $(ratio "$pd" "$gf")x | $df |"
	done <"$OUT/pil_preprocess.txt"
fi

if [[ " $PARTS " == *" encode "* ]]; then
	echo
	echo "## 2. encode 1024², quality 85, one core, thread CPU ms, median of $N (bytes)"
	echo "| image | format | Pillow | ours | ratio (Pillow / ours) |"
	echo "|---|---|---|---|---|"
	for fmt in jpeg webp; do
		pfmt=$(echo "$fmt" | tr a-z A-Z)
		on_core $PY "$OUT/pil.py" encode "$N" "$pfmt" 85 "$OUT/photo_1024.png" "$OUT/solid_1024.png" >"$OUT/pil_$fmt.txt"
		on_core "$OUT/imagingbench" encode -format "$fmt" -q 85 -n "$N" "$OUT/photo_1024.png" "$OUT/solid_1024.png" >"$OUT/go_$fmt.txt"
		while read -r f pms pb; do
			read -r _ gms gb < <(awk -v f="$f" '$1 == f' "$OUT/go_$fmt.txt")
			echo "| $f | $fmt | $pms ($pb) | $gms ($gb) | $(ratio "$pms" "$gms")x |"
		done <"$OUT/pil_$fmt.txt"
	done
fi

free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_live() {
	for _ in $(seq 1 600); do
		curl -fsS "http://127.0.0.1:$1/tt-liveness" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "server on port $1 did not become live" >&2
	return 1
}
json_body() { $PY -c 'import base64, json, sys; print(json.dumps({"prompt": base64.b64encode(open(sys.argv[1], "rb").read()).decode()}))' "$1" >"$2"; }
# hey_rps URL BODY C [taskset core]: requests/s of a DURATION run (non-200 answers are reported).
hey_rps() {
	local url=$1 body=$2 c=$3 pin=${4:-} out
	local cmd=(hey -z "$DURATION" -c "$c")
	[ -n "$body" ] && cmd+=(-m POST -T application/json -H "Authorization: Bearer your-secret-key" -D "$body")
	[ -n "$pin" ] && cmd=(taskset -c "$pin" "${cmd[@]}")
	out=$("${cmd[@]}" "$url")
	if echo "$out" | grep -E '^\s+\[[0-9]{3}\]' | grep -qv '\[200\]'; then
		echo "non-200 answers from $url:" >&2
		echo "$out" | grep -E '^\s+\[[0-9]{3}\]' >&2
	fi
	echo "$out" | awk '/Requests\/sec/ {printf "%.1f", $2}'
	echo "$out" | awk '/\[200\]/ {print $2}' >"$OUT/last_ok_count"
}
# cpu_ticks PID: user + system CPU of a process (and its threads) in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# tree_ticks PID: cpu_ticks of PID and all its descendants (the Python workers are children).
tree_ticks() {
	local t kid
	t=$(cpu_ticks "$1" 2>/dev/null || echo 0)
	for kid in $(pgrep -P "$1" || true); do t=$((t + $(tree_ticks "$kid"))); done
	echo "$t"
}
# cpu_ms_per_req PID URL BODY C: runs hey_rps and prints "req/s cpu-ms-per-answer" for the process tree.
cpu_ms_per_req() {
	local t0 t1 rps
	t0=$(tree_ticks "$1")
	rps=$(hey_rps "$2" "$3" "$4")
	t1=$(tree_ticks "$1")
	awk -v r="$rps" -v n="$(cat "$OUT/last_ok_count")" -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
		'BEGIN { if (n > 0) printf "%s %.2f\n", r, t / hz / n * 1000; else printf "%s -\n", r }'
}

if [[ " $PARTS " == *" route "* ]]; then
	json_body "$OUT/photo_1920x1080.jpg" "$OUT/cnn_1080.json"
	json_body "$OUT/photo_500x375.jpg" "$OUT/cnn_375.json"
	port=$(free_port)
	env MODEL_RUNNER=tt-xla-resnet MOCK_CNN_SECONDS=0 MOCK_WARMUP_SECONDS=0 MOCK_DEVICES_COUNT=1 DEVICE_IDS="(0)" \
		WORKER_ISOLATION=inprocess SERVICE_HOST=127.0.0.1 SERVICE_PORT="$port" LOG_LEVEL=WARNING \
		taskset -c "$CORE" "$OUT/tt-media-server" >"$OUT/route-server.log" 2>&1 &
	PIDS+=($!)
	wait_live "$port"
	echo
	echo "## 3. POST /cnn/search-image, server pinned to core $CORE (hey on core $LOADCORE, c=4, $DURATION) vs PIL preprocessing alone on one core"
	echo "Per CPU-second: images answered / the server process's CPU time (user+system, all threads), against"
	echo "1000 / PIL's thread-CPU ms per image; wall req/s also shown (it includes whatever else the shared box ran on core $CORE)."
	echo "| image | route img/s per CPU-s (ours) | route wall req/s | PIL preprocessing img/s per CPU-s | ratio |"
	echo "|---|---|---|---|---|"
	spid=${PIDS[-1]}
	hz=$(getconf CLK_TCK)
	for s in 1920x1080:1080 500x375:375; do
		f=photo_${s%%:*}.jpg
		hey_rps "http://127.0.0.1:$port/cnn/search-image" "$OUT/cnn_${s##*:}.json" 1 "$LOADCORE" >/dev/null # warm
		t0=$(cpu_ticks "$spid")
		rps=$(hey_rps "http://127.0.0.1:$port/cnn/search-image" "$OUT/cnn_${s##*:}.json" 4 "$LOADCORE")
		t1=$(cpu_ticks "$spid")
		per=$(awk -v n="$(cat "$OUT/last_ok_count")" -v t=$((t1 - t0)) -v hz="$hz" 'BEGIN { if (t > 0) printf "%.1f", n / (t / hz); else print 0 }')
		pil=$(awk -v ms="${PIL_EXACT[$f]}" 'BEGIN { printf "%.1f", 1000 / ms }')
		echo "| $f | $per | $rps | $pil | $(ratio "$per" "$pil")x |"
	done
	kill "${PIDS[-1]}" && wait "${PIDS[-1]}" 2>/dev/null || true
fi

if [[ " $PARTS " == *" p3 "* ]]; then
	if [ ! -d "$PYREF/ttms" ]; then
		echo "P3 skipped: no Python reference in $PYREF (scripts/setup-python-reference.sh)" >&2
		exit 0
	fi
	[ -f "$OUT/cnn_375.json" ] || json_body "$OUT/photo_500x375.jpg" "$OUT/cnn_375.json"
	json_body "$OUT/photo_224x224.jpg" "$OUT/cnn_224.json"
	echo '{"prompt":"a cat","guidance_scale":5}' >"$OUT/img.json"
	PYBIN=${PYBIN:-python3} # pydantic 2 + pydantic-settings 2 (pyenv here)
	# py_server SERVICE: starts the Python reference in mock mode with 4 workers on port $p.
	py_server() {
		p=$(free_port)
		cd "$PYREF/ttms"
		env PYTHONPATH="$PYREF/site" MODEL_RUNNER=mock MODEL_SERVICE="$1" DEVICE_IDS="(0),(1),(2),(3)" MOCK_CNN_PREPROCESS=1 \
			NEW_DEVICE_DELAY_SECONDS=0 MOCK_LOAD_SECONDS=1 MOCK_INFERENCE_SECONDS=0 LOG_LEVEL=WARNING \
			"$PYBIN" -m uvicorn main:app --lifespan on --host 127.0.0.1 --port "$p" >"$OUT/py-$1.log" 2>&1 &
		PIDS+=($!)
		cd - >/dev/null
		wait_live "$p"
		# Every worker ready (each imports torch: slow on a loaded box), then a warm-up run.
		for _ in $(seq 1 600); do
			curl -fsS "http://127.0.0.1:$p/tt-liveness" 2>/dev/null | grep -q '"is_ready":false' || break
			sleep 0.2
		done
	}
	# go_server RUNNER: starts this server with 4 zero-latency simulated devices on port $p.
	go_server() {
		p=$(free_port)
		env MODEL_RUNNER="$1" MOCK_IMAGE=solid MOCK_STEP_SECONDS=0 MOCK_CNN_SECONDS=0 MOCK_WARMUP_SECONDS=0 MOCK_DEVICES_COUNT=4 \
			DEVICE_IDS="(0),(1),(2),(3)" SERVICE_HOST=127.0.0.1 SERVICE_PORT="$p" LOG_LEVEL=WARNING \
			"$OUT/tt-media-server" >"$OUT/go-$1.log" 2>&1 &
		PIDS+=($!)
		wait_live "$p"
	}
	# stop_last: the last server and its worker processes (the Python workers ignore SIGTERM for a while).
	stop_last() {
		local pid=${PIDS[-1]} kids
		kids=$(pgrep -P "$pid" || true)
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" $kids 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	}
	declare -A R
	if [ "$P3_IMAGE" = 1 ]; then
		py_server image
		R[py_img]=$(hey_rps "http://127.0.0.1:$p/image/generations" "$OUT/img.json" 8)
		R[py_live]=$(hey_rps "http://127.0.0.1:$p/tt-liveness" "" 16)
		stop_last
	fi
	py_server cnn
	hey_rps "http://127.0.0.1:$p/cnn/search-image" "$OUT/cnn_375.json" 8 >/dev/null # warm-up
	read -r 'R[py_cnn]' 'R[py_cnn_ms]' < <(cpu_ms_per_req "${PIDS[-1]}" "http://127.0.0.1:$p/cnn/search-image" "$OUT/cnn_375.json" 8)
	read -r 'R[py_cnn224]' 'R[py_cnn224_ms]' < <(cpu_ms_per_req "${PIDS[-1]}" "http://127.0.0.1:$p/cnn/search-image" "$OUT/cnn_224.json" 8)
	stop_last
	if [ "$P3_IMAGE" = 1 ]; then
		go_server tt-sdxl-trace
		R[go_img]=$(hey_rps "http://127.0.0.1:$p/image/generations" "$OUT/img.json" 8)
		R[go_live]=$(hey_rps "http://127.0.0.1:$p/tt-liveness" "" 16)
		stop_last
	fi
	go_server tt-xla-resnet
	hey_rps "http://127.0.0.1:$p/cnn/search-image" "$OUT/cnn_375.json" 8 >/dev/null # warm-up
	read -r 'R[go_cnn]' 'R[go_cnn_ms]' < <(cpu_ms_per_req "${PIDS[-1]}" "http://127.0.0.1:$p/cnn/search-image" "$OUT/cnn_375.json" 8)
	read -r 'R[go_cnn224]' 'R[go_cnn224_ms]' < <(cpu_ms_per_req "${PIDS[-1]}" "http://127.0.0.1:$p/cnn/search-image" "$OUT/cnn_224.json" 8)
	stop_last
	echo
	echo "## 4. P3 against the Python reference in mock mode (4 workers, zero inference time; hey, $DURATION, whole box; load $(cut -d' ' -f1-3 /proc/loadavg))"
	echo "| route | Python req/s | ours req/s | ratio |"
	echo "|---|---|---|---|"
	[ "$P3_IMAGE" = 1 ] && echo "| POST /image/generations (solid 1024² JPEG q85), c=8 | ${R[py_img]} | ${R[go_img]} | $(ratio "${R[go_img]}" "${R[py_img]}")x |"
	echo "| POST /cnn/search-image (500x375 JPEG, work-equal), c=8 | ${R[py_cnn]} | ${R[go_cnn]} | $(ratio "${R[go_cnn]}" "${R[py_cnn]}")x |"
	echo "| POST /cnn/search-image (224x224 JPEG, work-equal), c=8 | ${R[py_cnn224]} | ${R[go_cnn224]} | $(ratio "${R[go_cnn224]}" "${R[py_cnn224]}")x |"
	[ "$P3_IMAGE" = 1 ] && echo "| GET /tt-liveness, c=16 | ${R[py_live]} | ${R[go_live]} | $(ratio "${R[go_live]}" "${R[py_live]}")x |"
	echo
	echo
	echo "CNN, CPU time per answered request (user + system of every process of the server, workers included):"
	echo "| image | Python ms | ours ms | ratio (Python / ours) |"
	echo "|---|---|---|---|"
	echo "| 500x375 | ${R[py_cnn_ms]} | ${R[go_cnn_ms]} | $(ratio "${R[py_cnn_ms]}" "${R[go_cnn_ms]}")x |"
	echo "| 224x224 | ${R[py_cnn224_ms]} | ${R[go_cnn224_ms]} | $(ratio "${R[py_cnn224_ms]}" "${R[go_cnn224_ms]}")x |"
	echo "(Work-equal: the Python mock decodes and preprocesses each image with PIL as HEAD's Forge runner does, then"
	echo "answers a constant; ours decodes, preprocesses bit-exactly and classifies on the zero-latency simulator.)"
fi
