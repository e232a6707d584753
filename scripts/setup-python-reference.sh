#!/usr/bin/env bash
# Sets up the Python tt-media-server (the reference this server replaces) to run here in mock
# mode, as ../shared/reference-python-server.md §8.3 describes, in a scratch directory outside
# the repository (nothing of it is committed): the a8e7d0bd8 tree plus the upstream one-line
# pydantic-2 fix (0f43b4f02) and the §8.2 mock-runner edits, FastAPI/Starlette/uvicorn from
# Debian trixie .debs unpacked onto a PYTHONPATH directory (the system apt configuration is not
# touched), numpy/PIL/torch from bookworm's packages. Used by scripts/bench-imaging.sh (P3).
#
#   REF=/path/to/tt-media-server scripts/setup-python-reference.sh          # a checked-out tree
#   REF_GIT=/path/to/tt-inference-server.git scripts/setup-python-reference.sh   # git dir; REF_COMMIT (a8e7d0bd8)
#
# Any clone or snapshot of github.com/tenstorrent/tt-inference-server that holds a8e7d0bd8 serves
# as REF_GIT (e.g. `git clone --bare`, or a mirror snapshot; one test payload blob absent from a
# snapshot only prints an error, the server's files are all there).
#
# Result: $PYREF/ttms (the patched tree) and $PYREF/site (PYTHONPATH); default
# PYREF=~/.cache/tt-media-server-go/python-reference. Needs root for apt, and a python3 with
# pydantic 2 and pydantic-settings 2 (the machine's pyenv 3.11).
set -euo pipefail
PYREF=${PYREF:-$HOME/.cache/tt-media-server-go/python-reference}
REF_COMMIT=${REF_COMMIT:-a8e7d0bd8}
S=$PYREF
mkdir -p "$S"
rm -rf "$S/ttms" && mkdir -p "$S/ttms"
if [ -n "${REF:-}" ]; then
	cp -a "$REF/." "$S/ttms/"
elif [ -n "${REF_GIT:-}" ]; then
	git --git-dir="$REF_GIT" archive "$REF_COMMIT" tt-media-server | tar -x -C "$S/ttms" --strip-components=1
else
	echo "setup-python-reference: set REF (a tt-media-server tree at $REF_COMMIT) or REF_GIT (a tt-inference-server git dir)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
for p in python3-numpy python3-pil python3-torch; do
	dpkg -s "$p" >/dev/null 2>&1 || apt-get install -y -qq --no-install-recommends "$p" >/dev/null
done
URI=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
mkdir -p "$S/apt/lists/partial" "$S/apt/cache/archives/partial" "$S/debs" "$S/x" "$S/site"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $URI trixie main" >"$S/apt/sources.list"
O=(-o "Dir::Etc::SourceList=$S/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$S/apt/lists" -o "Dir::Cache=$S/apt/cache")
apt-get "${O[@]}" update -qq
(cd "$S/debs" && apt-get "${O[@]}" download python3-fastapi python3-starlette python3-uvicorn python3-anyio python3-h11 python3-python-multipart 2>/dev/null)
for f in "$S"/debs/*.deb; do dpkg -x "$f" "$S/x"; done
ln -sfn "$S"/x/usr/lib/python3/dist-packages/* "$S/site/"
for p in numpy PIL torch; do ln -sfn /usr/lib/python3/dist-packages/$p "$S/site/$p"; done
cd "$S/ttms"
sed -i 's/    default_throttle_level = "5"/    default_throttle_level: str = "5"/' config/settings.py
M=tt_model_runners/mock_runner.py
sed -i 's/^import time  # Add this import$/import time, os  # Add this import\nfrom PIL import Image\nfrom domain.transcription_response import TranscriptionResponse/' $M
sed -i 's/def get_device(self, device_id: int):/def get_device(self, device_id=None):/' $M
sed -i 's/async def load_model(self) -> bool:/async def load_model(self, device=None) -> bool:/' $M
sed -i 's/time.sleep(10)  # Use time.sleep() instead of await asyncio.sleep()/time.sleep(float(os.environ.get("MOCK_LOAD_SECONDS", 10)))/' $M
sed -i 's/time.sleep(2 \* num_inference_steps + 10)  # Use time.sleep() instead of await asyncio.sleep()/time.sleep(float(os.environ.get("MOCK_INFERENCE_SECONDS", 2 * num_inference_steps + 10)))/' $M
sed -i 's/^        return None$/        return [Image.new("RGB", (1024, 1024), (120, 60, 200)) if hasattr(r, "guidance_scale") else (TranscriptionResponse(text="mock transcription", task="transcribe", language="english", duration=r._duration) if hasattr(r, "is_preprocessing_enabled") else {"top1_class_label": "mock", "top1_class_probability": "0.9900%"}) for r in prompt]/' $M
grep -q 'Image.new("RGB", (1024, 1024)' $M || { echo "setup-python-reference: the mock runner edit did not apply (not the a8e7d0bd8 tree?)" >&2; exit 1; }
# The work-equal CNN reference (issue 26): the mock's CNN answer is still a constant, but first it
# does HEAD's Forge runner's host work (tt_model_runners/forge_runners/forge_runner.py run():
# _get_pil_image — base64 decode, Image.open, convert('RGB') — then loader.input_preprocess,
# torchvision's Resize(256) bilinear, CenterCrop(224), ToTensor, Normalize), here in numpy as
# torchvision computes it. MOCK_CNN_PREPROCESS=0 turns it off (the constant answer alone).
sed -i 's/else {"top1_class_label": "mock", "top1_class_probability": "0.9900%"}) for r in prompt]/else _tt_cnn_work(r)) for r in prompt]/' $M
cat >>$M <<'PYEOF'


import base64 as _tt_b64, io as _tt_io
import numpy as _tt_np
_TT_MEAN = _tt_np.array([0.485, 0.456, 0.406], _tt_np.float32).reshape(3, 1, 1)
_TT_STD = _tt_np.array([0.229, 0.224, 0.225], _tt_np.float32).reshape(3, 1, 1)


def _tt_cnn_work(r):
    """HEAD's Forge runner's host work for one classification, then the mock's constant answer."""
    if os.environ.get("MOCK_CNN_PREPROCESS", "1") == "1":
        p = r.prompt
        if isinstance(p, str):
            p = _tt_b64.b64decode(p.split(",", 1)[1] if p.startswith("data:") else p)
        im = Image.open(_tt_io.BytesIO(p))
        if im.mode != "RGB":
            im = im.convert("RGB")
        w, h = im.size
        nw, nh = (256, int(256 * h / w)) if w <= h else (int(256 * w / h), 256)
        im = im.resize((nw, nh), Image.BILINEAR)
        left, top = int(round((nw - 224) / 2.0)), int(round((nh - 224) / 2.0))
        x = _tt_np.asarray(im.crop((left, top, left + 224, top + 224)), _tt_np.float32).transpose(2, 0, 1) / 255
        x = (x - _TT_MEAN) / _TT_STD
    return {"top1_class_label": "mock", "top1_class_probability": "0.9900%"}
PYEOF
grep -q '_tt_cnn_work(r)) for r in prompt' $M || { echo "setup-python-reference: the work-equal CNN edit did not apply" >&2; exit 1; }
echo "python reference ready: PYTHONPATH=$S/site, tree $S/ttms"
