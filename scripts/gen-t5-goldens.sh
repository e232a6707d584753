#!/usr/bin/env bash
# Generates the golden data of runners/diffusion/t5 (issue 8, the T5 / SD3.5 tokenizer_3 item)
# into $TT_GOLDEN_DIR/t5 (default ~/.cache/tt-media-server-go/goldens/t5; never into the
# repository itself), where the tests find it (internal/shareddata) when ../shared/testdata/t5,
# the old location, is absent: ../shared/testdata may be read-only.
#
#   scripts/gen-t5-goldens.sh SENTENCEPIECE_SRC [NODE_TOKENIZERS_DIR] [OUT_DIR]
#
# SENTENCEPIECE_SRC  a google/sentencepiece checkout, or its bare git directory (the script then
#                    reads the files at tag v0.1.97 with `git show`). Nothing is downloaded here.
# NODE_TOKENIZERS_DIR optional: a directory whose node_modules holds the npm package
#                    `tokenizers` (Hugging Face tokenizers' Node binding, e.g. 0.23.2, installed
#                    with `npm install tokenizers@0.23.2`). Without it the tokenizer.json goldens
#                    (hf_*.json) are not regenerated.
# OUT_DIR            default: $TT_GOLDEN_DIR/t5, ~/.cache/tt-media-server-go/goldens/t5.
#
# What it makes (the README.md written beside them says the same, with the versions used):
#   test_model.model, test_ja_model.model   sentencepiece's own Unigram test models (python/test/)
#   bf_model.model   a Unigram model trained here on sentencepiece's data/botchan.txt with T5's id
#                    layout (pad 0, eos 1, unk 2, no bos), byte_fallback and two user-defined symbols
#   spm_<model>.json golden Encode ids/pieces and Decode text from Debian's python3-sentencepiece
#   *.tokenizer.json Hugging Face tokenizer.json files converted from the models the way
#                    transformers' T5 converter lays them out (Precompiled charsmap, Metaspace)
#   hf_<name>.json   golden ids and decoded text from Hugging Face tokenizers (Node binding)
#
# Needs Debian's python3-sentencepiece and python3-protobuf (installed with apt-get if missing).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC=${1:?usage: gen-t5-goldens.sh SENTENCEPIECE_SRC [NODE_TOKENIZERS_DIR] [OUT_DIR]}
NODEDIR=${2:-}
OUT=${3:-${TT_GOLDEN_DIR:-$HOME/.cache/tt-media-server-go/goldens}/t5}
SPM_TAG=v0.1.97
PY=/usr/bin/python3

if ! $PY -c 'import sentencepiece, google.protobuf' 2>/dev/null; then
	echo "installing python3-sentencepiece python3-protobuf ..." >&2
	SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq python3-sentencepiece python3-protobuf >/dev/null
fi

mkdir -p "$OUT"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gen-t5-goldens.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# getsrc PATH DEST: a file of sentencepiece at $SPM_TAG (bare git dir) or from the checkout.
getsrc() {
	if [ -f "$SRC/$1" ]; then
		cp "$SRC/$1" "$2"
	else
		git --git-dir="$SRC" show "$SPM_TAG:$1" >"$2"
	fi
}
getsrc python/test/test_model.model "$OUT/test_model.model"
getsrc python/test/test_ja_model.model "$OUT/test_ja_model.model"
getsrc data/botchan.txt "$TMP/botchan.txt"
getsrc data/wagahaiwa_nekodearu.txt "$TMP/wagahaiwa.txt"
SPM_COMMIT=$( (git --git-dir="$SRC" rev-parse "$SPM_TAG^{commit}" 2>/dev/null || git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown) | head -1)

OUT=$(cd "$OUT" && pwd)
$PY - "$OUT" "$TMP" <<'EOF'
import base64, json, os, sys
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as pb

out, tmp = sys.argv[1], sys.argv[2]

# A model with T5's id layout, byte fallback and user-defined symbols, trained single-threaded
# on botchan.txt so that unknown characters (CJK, emoji) take the byte-fallback path.
# Relative paths and a fixed seed keep the model file byte-identical from run to run (the
# trainer records its input and prefix paths in the model).
spm.set_random_generator_seed(1)
os.chdir(tmp)
spm.SentencePieceTrainer.train(
    input="botchan.txt", model_prefix="bf_model",
    vocab_size=1000, model_type="unigram", byte_fallback=True, num_threads=1,
    pad_id=0, eos_id=1, unk_id=2, bos_id=-1, user_defined_symbols=["<extra_id_0>", "@@"],
    character_coverage=1.0, minloglevel=2)
os.replace("bf_model.model", os.path.join(out, "bf_model.model"))
os.remove("bf_model.vocab")

TEXTS = [
    "", " ", "   ", "a", "Hello world", "Hello world.", "  leading and trailing  ",
    "many     spaces\tand\ttabs\nand\nnewlines", "I saw a girl with a telescope.",
    "a photo of an astronaut riding a horse on mars, 4k, highly detailed",
    "The quick brown fox jumps over the lazy dog 1234567890",
    "digits: 0 12 345 6789 3.14159 1,000,000", "punctuation!?.,;:'\"()[]{}<>-_=+*/\\|@#$%^&~`",
    "café naïve résumé Ærøskøbing Straße", "e\u0301 combining acute", "ﬁne ligature ﬂow",
    "ＦＵＬＬ－ＷＩＤＴＨ　ｆｏｒｍｓ １２３", "ｶﾀｶﾅ half-width katakana", "①②③ ⅫⅣ ㎏ ㍻",
    "吾輩は猫である。名前はまだ無い。", "東京 タワー 서울 北京", "emoji 😀🚀 and 👩\u200d💻 zwj",
    "flags 🇯🇵🇺🇸 skin 👍🏽", "\u00a0nbsp\u00a0and\u2003em\u3000ideographic", "zero\u200bwidth\ufeffbom",
    "Ελληνικά Русский עברית العربية हिन्दी", "<unk> <s> </s> <pad> literal", "<extra_id_0> and @@ user symbols",
    "literal <0x41> byte piece", "</s></s>x<extra_id_0><extra_id_0>@@@", "ab\u2581 \u2581cd",
    "A\u030a decomposed ring", "\u1100\u1161\u11a8 jamo", "ｶﾞｷﾞ ﾊﾟ half-width voiced", "…… ㈱ ℃ ™ ½",
    "क्षत्रिय देवनागरी", "นี่คือภาษาไทย", "\u0301 leading combining", "a\u200d\u0301b", "Ⅰ Ⅱ ⅰⅱ ｆｉ",
    "\ufb01\u0301 ligature+accent", "line\r\nbreak\rcr", "a\u0308\u0301 \u00c5 \u01c5 \ufb03", "שָׁלוֹם مَرْحَبًا",
    "กำ ຳ sara am", "ㄱㅏ ㅎㅏㄴ compat jamo", "\U0001F468\u200D\U0001F469\u200D\U0001F467 \U0001F44B\U0001F3FF", "\u2764\ufe0f \u00a9\ufe0f",
    "\u2581already\u2581escaped", "x" * 40, "ab" * 30 + " " + "z" * 20,
    " ".join(["word%d" % i for i in range(150)]),
]
# Every 97th line of botchan.txt and every 211th of wagahaiwa_nekodearu.txt (first 200
# characters): real sentences for the Viterbi search, in and out of each model's alphabet.
for name, step in (("botchan.txt", 97), ("wagahaiwa.txt", 211)):
    with open(os.path.join(tmp, name), encoding="utf-8") as f:
        lines = [l.strip() for l in f if l.strip()]
    TEXTS += [l[:200] for l in lines[::step][:40]]

def dump(name, data):
    with open(os.path.join(out, name), "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")

for model in ["test_model", "test_ja_model", "bf_model"]:
    path = os.path.join(out, model + ".model")
    sp = spm.SentencePieceProcessor(model_file=path)
    cases = []
    for t in TEXTS:
        ids = sp.encode(t)
        cases.append({"text": t, "ids": ids, "pieces": [sp.id_to_piece(i) for i in ids],
                      "decoded": sp.decode(ids)})
    # Decode of id lists that Encode never produces: control ids, unk, bytes out of order.
    m = pb.ModelProto(); m.ParseFromString(open(path, "rb").read())
    n = len(m.pieces)
    byte_ids = [i for i, p in enumerate(m.pieces) if p.type == pb.ModelProto.SentencePiece.BYTE]
    dec = [list(range(min(n, 40))), [sp.unk_id(), sp.unk_id()], [n - 1, 5, n - 2]]
    if byte_ids:
        b = {m.pieces[i].piece: i for i in byte_ids}
        dec += [[b["<0xE6>"], b["<0x97>"], b["<0xA5>"]], [b["<0xE6>"], b["<0x41>"], b["<0xFF>"]],
                [sp.piece_to_id("\u2581the"), b["<0xF0>"], b["<0x9F>"], b["<0x98>"], b["<0x80>"]]]
    decodes = [{"ids": d, "decoded": sp.decode(d)} for d in dec]
    ts = m.trainer_spec
    dump("spm_%s.json" % model, {
        "model": model + ".model", "sentencepiece_version": spm.__version__,
        "vocab_size": sp.get_piece_size(), "unk_id": sp.unk_id(), "bos_id": sp.bos_id(),
        "eos_id": sp.eos_id(), "pad_id": sp.pad_id(), "byte_fallback": ts.byte_fallback,
        "charsmap_bytes": len(m.normalizer_spec.precompiled_charsmap),
        "normalizer_name": m.normalizer_spec.name,
        "cases": cases, "decodes": decodes})

    # tokenizer.json the way transformers' SpmConverter/T5Converter writes it (Unigram model,
    # Precompiled + Strip-right + Replace(" {2,}" -> "▁") normalizer, Metaspace prepend "always").
    vocab = [[p.piece, p.score] for p in m.pieces]
    norm = [{"type": "Strip", "strip_left": False, "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "\u2581"}]
    if m.normalizer_spec.precompiled_charsmap:
        norm.insert(0, {"type": "Precompiled", "precompiled_charsmap":
                        base64.b64encode(m.normalizer_spec.precompiled_charsmap).decode()})
    eos = ts.eos_piece if ts.eos_id >= 0 else "</s>"
    eos_id = ts.eos_id
    added = []
    for i, p in enumerate(m.pieces):
        if p.type in (pb.ModelProto.SentencePiece.CONTROL, pb.ModelProto.SentencePiece.UNKNOWN,
                      pb.ModelProto.SentencePiece.USER_DEFINED):
            added.append({"id": i, "content": p.piece, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": p.type == pb.ModelProto.SentencePiece.USER_DEFINED,
                          "special": p.type != pb.ModelProto.SentencePiece.USER_DEFINED})
    tj = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
          "normalizer": {"type": "Sequence", "normalizers": norm},
          "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
          "post_processor": {"type": "TemplateProcessing",
                             "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": eos, "type_id": 0}}],
                             "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": eos, "type_id": 0}},
                                      {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": eos, "type_id": 0}}],
                             "special_tokens": {eos: {"id": eos, "ids": [eos_id], "tokens": [eos]}}},
          "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
          "model": {"type": "Unigram", "unk_id": ts.unk_id, "vocab": vocab, "byte_fallback": ts.byte_fallback}}
    if ts.byte_fallback:
        tj["decoder"] = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    with open(os.path.join(out, model + ".tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False)
    # The older layout that T5 checkpoints on the Hub carry: Precompiled + Replace(" {2,}" -> " ")
    # and WhitespaceSplit + Metaspace(add_prefix_space) pre-tokenizers, Metaspace decoder.
    t5 = dict(tj)
    t5["normalizer"] = {"type": "Sequence", "normalizers": norm[:-2] + [
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}
    t5["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}]}
    t5["decoder"] = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}
    t5["added_tokens"] = [dict(a, special=True, normalized=False) for a in added]
    with open(os.path.join(out, model + ".t5.tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(t5, f, ensure_ascii=False)

dump("texts.json", TEXTS)
EOF

HF_VERSION=none
if [ -n "$NODEDIR" ]; then
	HF_VERSION="$(cd "$NODEDIR" && node -e 'console.log(require("tokenizers/package.json").version)') (node $(node --version))"
	(cd "$NODEDIR" && node - "$OUT") <<'EOF'
const fs = require("fs"), path = require("path");
const { Tokenizer } = require("tokenizers");
const out = process.argv[2];
const texts = JSON.parse(fs.readFileSync(path.join(out, "texts.json"), "utf8"));
const version = require("tokenizers/package.json").version;
(async () => {
  for (const model of ["test_model", "test_ja_model", "bf_model",
                       "test_model.t5", "test_ja_model.t5", "bf_model.t5"]) {
    const tok = Tokenizer.fromFile(path.join(out, model + ".tokenizer.json"));
    const cases = [];
    for (const text of texts) {
      const enc = await tok.encode(text);
      const ids = Array.from(enc.getIds());
      cases.push({ text, ids, tokens: enc.getTokens(), decoded: await tok.decode(ids, true) });
    }
    fs.writeFileSync(path.join(out, "hf_" + model + ".json"), JSON.stringify(
      { tokenizer: model + ".tokenizer.json", tokenizers_version: version, add_special_tokens: true,
        decode_skip_special_tokens: true, cases }, null, 1) + "\n");
  }
})().catch((e) => { console.error(e); process.exit(1); });
EOF
fi

SPM_VERSION=$($PY -c 'import sentencepiece; print(sentencepiece.__version__)')
DEB_VERSION=$(dpkg-query -W -f='${Version}' python3-sentencepiece 2>/dev/null || echo unknown)
cat >"$OUT/README.md" <<EOF
# T5 (SD3.5 tokenizer_3) tokenizer goldens

Made by \`scripts/gen-t5-goldens.sh\` of tt-media-server-go; used by runners/diffusion/t5's tests.

| file | what |
| --- | --- |
| \`test_model.model\`, \`test_ja_model.model\` | google/sentencepiece \`python/test/\` Unigram test models, unchanged (tag $SPM_TAG, commit $SPM_COMMIT); nmt_nfkc precompiled charsmap |
| \`bf_model.model\` | Unigram, 1000 pieces, trained here on sentencepiece's \`data/botchan.txt\` with sentencepiece $SPM_VERSION: byte_fallback, T5's ids (pad 0, eos 1, unk 2, no bos), user-defined \`<extra_id_0>\` and \`@@\`, character_coverage 1.0, num_threads 1 |
| \`spm_<model>.json\` | \`texts.json\` encoded by Debian python3-sentencepiece $DEB_VERSION (\`encode\`: ids without eos, pieces) and \`decode(ids)\`; plus \`decodes\`: decode of hand-picked id lists |
| \`<model>.tokenizer.json\` | the model converted to Hugging Face's tokenizer.json as transformers' T5 converter writes it (Unigram vocab with scores; normalizer Precompiled + Strip(right) + Replace(" {2,}" -> "▁"); Metaspace pre-tokenizer, prepend_scheme always; eos post-processor) |
| \`<model>.t5.tokenizer.json\` | the same model in the older layout of T5 checkpoints on the Hub: normalizer Precompiled + Replace(" {2,}" -> " "), pre-tokenizer WhitespaceSplit + Metaspace(add_prefix_space), Metaspace decoder, all added tokens special |
| \`hf_<model>.json\` | \`texts.json\` encoded by Hugging Face tokenizers $HF_VERSION (npm Node binding) from \`<model>.tokenizer.json\` with special tokens (eos appended), and decoded with skip_special_tokens |
| \`texts.json\` | the input strings: spaces, tabs, newlines, accents, combining marks, ligatures, full/half-width forms, CJK, Hangul, emoji (ZWJ, flags, skin tones), NBSP/em/ideographic spaces, zero-width chars, scripts, literal control pieces, digits, punctuation, long inputs; then every 97th line of sentencepiece's data/botchan.txt and every 211th of data/wagahaiwa_nekodearu.txt (first 200 characters each) |

Licences: sentencepiece's models and botchan.txt: Apache-2.0 (google/sentencepiece). The rest is
generated data.
EOF
rm -f "$OUT"/*.vocab
echo "wrote $(ls "$OUT" | wc -l) files to $OUT" >&2
