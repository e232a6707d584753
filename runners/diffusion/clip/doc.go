// Package clip implements the byte-level BPE tokenizer of openai/CLIP
// (clip/simple_tokenizer.py) as used by Stable Diffusion XL's two text encoders:
// CLIP's text cleaning (HTML unescaped twice, whitespace collapsed, Python's full Unicode
// lower-casing), its regex pre-tokenizer written out by hand, byte-pair merging by merge rank
// with a per-word cache, the <|startoftext|>/<|endoftext|> special tokens, and the 77-id
// encoder inputs with each encoder's own padding id.
//
// Merges load from the original gzipped bpe_simple_vocab_16e6.txt.gz or from a Hugging Face
// tokenizer directory (vocab.json + merges.txt, tokenizer/ and tokenizer_2/ of an SDXL model).
// ftfy.fix_text, which openai/CLIP applies first, is not reproduced; it is the identity on
// NFC text without mojibake, curly quotes, ligatures or full-width forms.
package clip
