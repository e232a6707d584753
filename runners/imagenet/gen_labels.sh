#!/bin/sh
# gen_labels.sh writes imagenet_classes.txt: the 1000 ILSVRC-2012 (ImageNet-1k) class names in
# model output order, one per line, as embedded by imagenet.go.
#
# Source: Debian package python3-torchvision 0.14.1-2 (Debian 12), the list
# torchvision.models._meta._IMAGENET_CATEGORIES in
# /usr/lib/python3/dist-packages/torchvision/models/_meta.py.
# Licence of that file: BSD-3-Clause (torchvision, (c) Facebook, Inc. and its affiliates; see
# /usr/share/doc/python3-torchvision/copyright).
#
# Usage (from this directory):
#   apt-get update && apt-get install -y python3-torchvision
#   ./gen_labels.sh
# The list is read with Python's ast module, so torch itself is not imported.
set -eu

META=${META:-/usr/lib/python3/dist-packages/torchvision/models/_meta.py}
OUT=${OUT:-imagenet_classes.txt}

python3 - "$META" "$OUT" <<'PY'
import ast
import sys

meta, out = sys.argv[1], sys.argv[2]
with open(meta, encoding="utf-8") as f:
    tree = ast.parse(f.read(), filename=meta)
labels = None
for node in tree.body:
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "_IMAGENET_CATEGORIES" for t in node.targets
    ):
        labels = ast.literal_eval(node.value)
if labels is None:
    sys.exit(f"{meta}: _IMAGENET_CATEGORIES not found")
if len(labels) != 1000 or any(not l or "\n" in l or l != l.strip() for l in labels):
    sys.exit(f"{meta}: expected 1000 one-line labels, got {len(labels)}")
with open(out, "w", encoding="utf-8", newline="\n") as f:
    f.write("\n".join(labels) + "\n")
print(f"wrote {len(labels)} labels to {out}")
PY
