#!/usr/bin/env bash
# Audio front-end benchmark (issue 5, item 5): in one run, alternating rounds,
#   * decode + downmix + resample to 16 kHz mono float32 of the 44.1 kHz stereo WAV and MP3 test
#     files: Go's audio.Decode (BenchmarkDecode16k) against
#     `ffmpeg -i x -ar 16000 -ac 1 -f f32le -` (timed with hyperfine; a whole process, which is
#     what openai/whisper's load_audio runs for every request);
#   * Whisper log-mel of one 30 s window (80 and 128 bins): Go's LogMel (BenchmarkLogMel)
#     against the same maths in torch on CPU (torch.stft + mel_filters.npz, written below).
# Prints × real time, CPU ms and the ratios. "Per core" figures use CPU time (user + system)
# with Go at GOMAXPROCS=1 and torch at 1 thread, so they hold on a loaded machine; wall-clock
# figures are printed too.
#
#   scripts/bench-audio.sh                 # ROUNDS=3 RUNS=10 BENCHTIME=2s by default
#   ROUNDS=5 scripts/bench-audio.sh
#
# Installs ffmpeg, hyperfine and python3-torch with apt-get when they are missing. Needs the
# shared test data beside the repository (../shared/testdata). Results go to $OUT.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TD=${TESTDATA:-$ROOT/../shared/testdata}
ROUNDS=${ROUNDS:-3}
RUNS=${RUNS:-10}
BENCHTIME=${BENCHTIME:-2s}
PY=${PYTHON:-/usr/bin/python3} # Debian's python3, where python3-torch installs
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/bench-audio.XXXXXX")}
mkdir -p "$OUT"
WAV=$TD/audio/speech_a_44k1_s16_stereo.wav
MP3=$TD/audio/speech_b_44k1_cbr128_stereo_id3.mp3

for f in "$WAV" "$MP3" "$TD/whisper/mel_filters.npz" "$TD/whisper/speech_b_16k_s16_mono.waveform.f32"; do
	[ -r "$f" ] || { echo "missing test data: $f" >&2; exit 2; }
done

missing=()
command -v ffmpeg >/dev/null || missing+=(ffmpeg)
command -v hyperfine >/dev/null || missing+=(hyperfine)
"$PY" -c 'import torch, numpy' 2>/dev/null || missing+=(python3-torch python3-numpy)
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing ${missing[*]} ..." >&2
	SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# torch log-mel, written from the definition (whisper/audio.py semantics, not its code):
# periodic Hann, center=True reflect padding, drop the last frame, |X|², filters @ power,
# log10 clamp, max − 8 floor, (x + 4) / 4.
cat >"$OUT/torch_logmel.py" <<'PYEOF'
import json, sys, time
import numpy as np
import torch

td, rounds_out = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
filters = np.load(td + "/whisper/mel_filters.npz")
window = torch.hann_window(400, periodic=True)

def logmel(x, bank):
    spec = torch.stft(x, n_fft=400, hop_length=160, window=window, center=True,
                      pad_mode="reflect", return_complex=True)
    power = spec[:, :-1].abs() ** 2
    mel = torch.clamp(bank @ power, min=1e-10).log10()
    mel = torch.maximum(mel, mel.max() - 8.0)
    return (mel + 4.0) / 4.0

# Equivalence check against whisper's golden features (utterance a, 16 kHz).
a = np.fromfile(td + "/whisper/speech_a_16k_s16_mono.waveform.f32", dtype="<f4")
a = torch.from_numpy(np.pad(a, (0, 480000 - len(a))))
res = {"check": {}}
for n in (80, 128):
    gold = np.fromfile(td + f"/whisper/speech_a_16k_s16_mono.mel{n}.f32", dtype="<f4").reshape(n, 3000)
    got = logmel(a, torch.from_numpy(filters[f"mel_{n}"])).numpy()
    res["check"][n] = float(np.abs(got - gold).max())

# 30 s of speech: utterance b repeated, as in BenchmarkLogMel.
b = np.fromfile(td + "/whisper/speech_b_16k_s16_mono.waveform.f32", dtype="<f4")
x = torch.from_numpy(np.resize(b, 480000).astype(np.float32))
for n in (80, 128):
    bank = torch.from_numpy(filters[f"mel_{n}"])
    for _ in range(3):
        logmel(x, bank)
    wall, cpu = [], []
    for _ in range(int(sys.argv[3])):
        w0, c0 = time.perf_counter(), time.process_time()
        logmel(x, bank)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    res[n] = {"wall_ms": 1e3 * float(np.median(wall)), "cpu_ms": 1e3 * float(np.median(cpu))}
res["torch"] = torch.__version__
with open(rounds_out, "a") as f:
    f.write(json.dumps(res) + "\n")
PYEOF

echo "machine: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >"$OUT/load.txt"
(cd "$ROOT" && go test -c -o "$OUT/audio.test" ./media/audio)

for r in $(seq 1 "$ROUNDS"); do
	echo "round $r/$ROUNDS ..." >&2
	for f in "$WAV" "$MP3"; do
		hyperfine -N --style none --warmup 2 --runs "$RUNS" --export-json "$OUT/ffmpeg.$(basename "$f").$r.json" \
			"ffmpeg -nostdin -loglevel error -i $f -ar 16000 -ac 1 -f f32le -" >/dev/null
	done
	# ffmpeg's fixed cost: the same pipeline on 1 ms of generated stereo audio.
	hyperfine -N --style none --warmup 2 --runs "$RUNS" --export-json "$OUT/ffmpeg-startup.$r.json" \
		"ffmpeg -nostdin -loglevel error -f lavfi -i anullsrc=r=44100:cl=stereo -t 0.001 -ar 16000 -ac 1 -f f32le -" >/dev/null
	(cd "$ROOT/media/audio" && GOMAXPROCS=1 "$OUT/audio.test" -test.run '^$' -test.bench 'Decode16k|LogMel' \
		-test.benchtime "$BENCHTIME" -test.cpu 1) >"$OUT/go.$r.txt"
	(cd "$ROOT/media/audio" && "$OUT/audio.test" -test.run '^$' -test.bench 'Decode16k|LogMel' \
		-test.benchtime "$BENCHTIME" -test.cpu 2) >"$OUT/go2.$r.txt"
	"$PY" "$OUT/torch_logmel.py" "$TD" "$OUT/torch.jsonl" "$RUNS"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/load.txt"

"$PY" - "$OUT" "$TD" "$ROUNDS" <<'PYEOF'
import glob, json, os, re, statistics as st, sys
out, td, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
man = {f["file"]: f for f in json.load(open(td + "/audio/manifest.json"))["files"]}
med = st.median

def gobench(pattern):
    rows = {}
    for path in sorted(glob.glob(os.path.join(out, pattern))):
        for line in open(path):
            if not line.startswith("Benchmark"):
                continue
            f = line.split()
            name = re.sub(r"-\d+$", "", f[0])
            vals = {f[i + 1]: float(f[i]) for i in range(2, len(f) - 1, 2)}
            rows.setdefault(name, []).append(vals)
    return rows

go1, go2 = gobench("go.*.txt"), gobench("go2.*.txt")
print(open(os.path.join(out, "load.txt")).read().strip())
print(f"rounds: {rounds}; medians over rounds. 'cpu' = user+system CPU time (per core); 'wall' = elapsed.\n")
ffs = [json.load(open(p))["results"][0] for p in glob.glob(os.path.join(out, "ffmpeg-startup.*.json"))]
s_cpu, s_wall = med(r["user"] + r["system"] for r in ffs), med(r["median"] for r in ffs)
print("decode + resample to 16 kHz mono f32, × real time (higher is better); 'Go 2 cores' is GOMAXPROCS=2"
      " (MP3 frames decode in parallel chunks), against ffmpeg's single-process wall time")
print(f"ffmpeg's fixed cost per process (1 ms input): {1e3 * s_cpu:.1f} ms CPU, {1e3 * s_wall:.1f} ms wall;"
      " 'ffmpeg−fixed' leaves it out")
print(f"{'file':40} {'Go cpu':>9} {'ffmpeg cpu':>11} {'ratio':>6} {'ffmpeg−fixed cpu':>17} {'ratio':>6} | {'Go wall':>8} {'ffmpeg wall':>11} {'ratio':>6} | {'Go 2 cores wall':>15} {'ratio':>6}")
for f in ("speech_a_44k1_s16_stereo.wav", "speech_b_44k1_cbr128_stereo_id3.mp3"):
    dur = man[f]["duration_s"]
    g = go1["BenchmarkDecode16k/" + f]
    g_cpu = med(v["x_realtime_per_cpu"] for v in g)
    g_wall = med(v["x_realtime"] for v in g)
    ff = [json.load(open(p))["results"][0] for p in glob.glob(os.path.join(out, f"ffmpeg.{f}.*.json"))]
    c = med(r["user"] + r["system"] for r in ff)
    f_cpu, f_net = dur / c, dur / max(c - s_cpu, 1e-6)
    f_wall = dur / med(r["median"] for r in ff)
    g2_wall = med(v["x_realtime"] for v in go2["BenchmarkDecode16k/" + f])
    print(f"{f + f' ({dur:.2f} s)':40} {g_cpu:9.1f} {f_cpu:11.1f} {g_cpu / f_cpu:6.2f} {f_net:17.1f} {g_cpu / f_net:6.2f}"
          f" | {g_wall:8.1f} {f_wall:11.1f} {g_wall / f_wall:6.2f} | {g2_wall:15.1f} {g2_wall / f_wall:6.2f}")

tr = [json.loads(l) for l in open(os.path.join(out, "torch.jsonl"))]
print(f"\nWhisper log-mel, one 30 s window, ms (lower is better); torch {tr[0]['torch']}, 1 thread")
print(f"{'n_mels':8} {'Go cpu':>8} {'torch cpu':>10} {'torch/Go':>9} | {'Go wall':>8} {'torch wall':>10} {'torch/Go':>9} | {'Go 2 cores wall':>15}")
for n in (80, 128):
    g = go1[f"BenchmarkLogMel/mel{n}"]
    g_cpu, g_wall = med(v["cpu_ms/op"] for v in g), med(v["ns/op"] for v in g) / 1e6
    g2_wall = med(v["ns/op"] for v in go2[f"BenchmarkLogMel/mel{n}"]) / 1e6
    t_cpu, t_wall = med(r[str(n)]["cpu_ms"] for r in tr), med(r[str(n)]["wall_ms"] for r in tr)
    print(f"{n:<8} {g_cpu:8.2f} {t_cpu:10.2f} {t_cpu / g_cpu:9.2f} | {g_wall:8.2f} {t_wall:10.2f} {t_wall / g_wall:9.2f} | {g2_wall:15.2f}")
print("\ntorch code vs whisper golden features, max abs diff: " +
      ", ".join(f"mel{n} {tr[0]['check'][str(n)]:.2g}" for n in (80, 128)))
print(f"raw results: {out}")
PYEOF
