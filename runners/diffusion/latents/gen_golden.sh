#!/bin/sh
# Regenerates testdata/torch_randn_golden.json: what torch.manual_seed(seed); torch.randn(shape)
# gives on the CPU, for both of torch's normal-fill kernels. Needs Debian's python3-torch
# (apt-get install -y python3-torch) and an x86-64 CPU with AVX2. The full tensors are not
# stored: each case keeps its first 64 values (float32 bits), its sum and the sha256 of its
# little-endian bytes; small tensors are stored whole.
set -eu
cd "$(dirname "$0")"
out=testdata/torch_randn_golden.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for cap in avx2 default; do
	ATEN_CPU_CAPABILITY=$cap /usr/bin/python3 - "$cap" "$tmp/$cap.json" <<'PY'
import hashlib, json, struct, sys
import torch
cap, path = sys.argv[1], sys.argv[2]
cases = []
def add(seed, shape, t):
    v = t.contiguous().numpy().astype('<f4')
    raw = v.tobytes()
    flat = v.reshape(-1)
    c = {"seed": seed, "shape": list(shape), "numel": int(flat.size),
         "sha256": hashlib.sha256(raw).hexdigest(), "sum": float(flat.astype('f8').sum()),
         "first_bits": ["%08x" % struct.unpack('<I', raw[4*i:4*i+4])[0] for i in range(min(64, flat.size))]}
    cases.append(c)
for seed in [0, 42, 2**32 - 1]:
    for shape in [(1, 4, 128, 128), (1, 16, 128, 128), (1,), (8,), (15,), (16,), (17,), (84,), (1000,)]:
        torch.manual_seed(seed)
        add(seed, shape, torch.randn(*shape))
# two draws in a row from one generator: 3 values (double path, caches one), then 40
torch.manual_seed(7)
a = torch.randn(3); b = torch.randn(40)
add(7, (3, 40), torch.cat([a, b]))
json.dump({"kernel": cap, "torch_version": torch.__version__, "cases": cases}, open(path, "w"))
PY
done
deb=$(dpkg-query -W -f='${Version}' python3-torch 2>/dev/null || echo unknown)
/usr/bin/python3 - "$tmp" "$out" "$deb" <<'PY'
import json, sys, platform
tmp, out, deb = sys.argv[1], sys.argv[2], sys.argv[3]
kernels = [json.load(open("%s/%s.json" % (tmp, k))) for k in ("avx2", "default")]
doc = {
    "description": "torch.manual_seed(seed); torch.randn(*shape) (float32, CPU) per ATEN_CPU_CAPABILITY kernel. "
                   "The case with shape [3, 40] is randn(3) then randn(40) from one generator, concatenated.",
    "generator": "runners/diffusion/latents/gen_golden.sh",
    "torch_version": kernels[0]["torch_version"],
    "debian_python3_torch": deb,
    "python": platform.python_version(),
    "machine": platform.machine(),
    "kernels": {k["kernel"]: k["cases"] for k in kernels},
}
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
PY
echo "wrote $out"
