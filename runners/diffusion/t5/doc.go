// Package t5 implements the Unigram sentencepiece tokenizer that T5 uses, the third text
// encoder of Stable Diffusion 3.5 (tokenizer_3 in the Hugging Face layout): it turns a prompt
// into T5 input ids ending in </s>, padded or truncated to a fixed length, and ids back to text.
//
// Two model files load, each with its own reference behaviour:
//
//   - spiece.model, sentencepiece's ModelProto, parsed from the protobuf wire format here.
//     Encode follows sentencepiece v0.1.97: the normalizer (precompiled charsmap read as a
//     Darts-clone double-array trie, longest rule first; user-defined symbols kept verbatim;
//     leading, trailing and repeated whitespace removed; a dummy "▁" prefix; spaces escaped to
//     "▁"; treat_whitespace_as_suffix), the optimized Viterbi over piece scores with
//     sentencepiece's float32/float64 arithmetic, unknown characters priced at the lowest score
//     minus 10 and a run of them merged into one <unk>, and byte fallback to <0xXX> pieces when
//     the model has it. Decode follows SentencePieceProcessor::Decode: control pieces
//     invisible, <unk> as the unk_surface " ⁇ ", byte pieces joined as UTF-8 with U+FFFD per
//     invalid byte, the leading "▁" dropped, then the model's denormalizer if it has one.
//   - tokenizer.json of Hugging Face tokenizers (model.type "Unigram"), which diffusers'
//     T5TokenizerFast reads. Encode follows tokenizers: added tokens split out first, the
//     normalizer sequence (Precompiled applied per extended grapheme cluster as tokenizers
//     does, Strip, Replace, Prepend), the Metaspace pre-tokenizer (alone or after
//     WhitespaceSplit), a Viterbi per word in float64 with runs of unknowns fused, byte
//     fallback, then the TemplateProcessing ids (</s>). Decode skips special added tokens and
//     runs the decoder chain (Metaspace, or Replace/ByteFallback/Fuse/Strip).
//
// The two references differ on some inputs (literal control tokens, compositions such as
// half-width katakana with voiced marks or Hangul jamo, a ligature followed by a combining
// mark, runs of spaces and newlines in the older T5 layout); each path matches its own
// reference on the golden texts. Components of tokenizer.json outside that list (NFKC,
// Lowercase, BPE models, lstrip/rstrip added tokens, ...) are refused with ErrUnsupported.
package t5
