#!/usr/bin/python3
"""Goldens of HEAD's SpeechT5 text functions, run as HEAD runs them.

normalize_text_for_tts and chunk_text are taken from HEAD's own source
(tt_model_runners/speecht5_runner.py, extracted with ast: the module imports torch and ttnn,
which this machine does not have) and run on Debian's python3-num2words. Writes JSON to argv[2]:
  normalize: [{"in", "out"}] for each line of the corpus (argv[3]) and the whole corpus;
  chunk: [{"in", "chunks"}] for long texts made from the corpus, with processor=None and with a
         processor whose token count is len(text) + 2 (the Go test uses the same count).
  argv[1]: the HEAD checkout (../shared/tt-media-server-head).
"""
import ast
import json
import re
import sys
from typing import List

import num2words as n2w
from num2words import num2words

head, out_path, corpus_path = sys.argv[1], sys.argv[2], sys.argv[3]
src_path = head + "/tt_model_runners/speecht5_runner.py"
tree = ast.parse(open(src_path, encoding="utf-8").read())
wanted = {"normalize_text_for_tts", "chunk_text"}
mod = ast.Module(body=[n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.Assign)) and
                       (getattr(n, "name", None) in wanted or
                        (isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "DEFAULT_CHUNK_SIZE" for t in n.targets)))],
                 type_ignores=[])
ns = {"re": re, "num2words": num2words, "List": List}
exec(compile(mod, src_path, "exec"), ns)
normalize, chunk_text = ns["normalize_text_for_tts"], ns["chunk_text"]


class Shape:
    def __init__(self, n):
        self.shape = (1, n)


class CountProcessor:
    """A processor whose input_ids hold len(text) + 2 tokens."""

    def __call__(self, text, return_tensors=None):
        return {"input_ids": Shape(len(text) + 2)}


lines = [l.rstrip("\n") for l in open(corpus_path, encoding="utf-8") if l.strip()]
norm = []
for t in lines + [" ".join(lines), "\n".join(lines)]:
    try:
        norm.append({"in": t, "out": normalize(t)})
    except Exception as e:  # noqa: BLE001 - a HEAD failure is a golden too
        norm.append({"in": t, "error": type(e).__name__})

texts = [
    " ".join(lines),
    "  " + "\n\n".join(lines) + "  ",
    "One sentence, " + ", ".join(["clause number %d goes here" % i for i in range(40)]) + ". And the end!",
    "A" * 300 + ". Short one. " + "B" * 100 + "? " + "C " * 200,
    "; ".join(["part %d of a long list" % i for i in range(30)]) + ".",
]
chunks = []
for t in texts:
    for name, proc in (("none", None), ("count", CountProcessor())):
        chunks.append({"in": t, "processor": name, "chunks": chunk_text(t, processor=proc)})

json.dump({"num2words_version": getattr(n2w, "__version__", "?"), "source": src_path,
           "normalize": norm, "chunk": chunks}, open(out_path, "w", encoding="utf-8"), ensure_ascii=False, indent=1)
