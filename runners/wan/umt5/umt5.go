// Package umt5 is Wan2.2's prompt tokenizer: WanPipeline's prompt_clean (HTML entities undone
// twice, whitespace runs collapsed, ends stripped) followed by google/umt5-xxl's SentencePiece
// Unigram model — encoded by runners/diffusion/t5, which reads spiece.model and tokenizer.json —
// with </s> appended, truncated and padded to max_sequence_length 512 as
// WanPipeline._get_t5_prompt_embeds asks its tokenizer. ftfy.fix_text, which diffusers applies
// only when ftfy is installed, is not applied.
package umt5

import (
	"fmt"
	"html"
	"strings"
	"unicode"

	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/t5"
)

// MaxLength is WanPipeline's max_sequence_length default (512 tokens).
const MaxLength = 512

// Tokenizer turns a prompt into UMT5 input ids.
type Tokenizer struct {
	tok    *t5.Tokenizer
	maxLen int
}

// Load reads a UMT5 tokenizer (spiece.model or tokenizer.json, as runners/diffusion/t5 loads).
func Load(path string) (*Tokenizer, error) {
	tok, err := t5.Load(path)
	if err != nil {
		return nil, fmt.Errorf("umt5 tokenizer: %w", err)
	}
	return New(tok, MaxLength)
}

// New wraps a loaded SentencePiece tokenizer with Wan's prompt cleaning and maxLen tokens.
func New(tok *t5.Tokenizer, maxLen int) (*Tokenizer, error) {
	if tok == nil || maxLen < 1 {
		return nil, fmt.Errorf("umt5 tokenizer: a tokenizer and a positive length are needed (got length %d)", maxLen)
	}
	return &Tokenizer{tok: tok, maxLen: maxLen}, nil
}

// MaxLen is the fixed sequence length of Encode's ids.
func (t *Tokenizer) MaxLen() int { return t.maxLen }

// PadID is the padding id (0 in UMT5's layout).
func (t *Tokenizer) PadID() int { return t.tok.PadID() }

// Encoding is one prompt's tokenizer output.
type Encoding struct {
	// IDs are MaxLen ids: the cleaned prompt's pieces, </s>, then padding.
	IDs []int
	// Mask is 1 for each real id, 0 for padding.
	Mask []int
	// SeqLen is the number of real ids (mask.gt(0).sum()): the text encoder's states past it
	// are replaced by zeros.
	SeqLen int
}

// Encode cleans prompt as prompt_clean does, tokenizes it, appends </s> and cuts (keeping
// </s>) or pads to MaxLen.
func (t *Tokenizer) Encode(prompt string) Encoding {
	ids, mask := t.tok.EncodePadded(Clean(prompt), t.maxLen)
	n := 0
	for _, m := range mask {
		n += m
	}
	return Encoding{IDs: ids, Mask: mask, SeqLen: n}
}

// Pieces tokenizes the cleaned prompt without </s>, cut or padding (for tests and tools).
func (t *Tokenizer) Pieces(prompt string) []int {
	ids := t.tok.Encode(Clean(prompt))
	return ids[:len(ids)-1]
}

// Clean is pipeline_wan.py's prompt_clean without ftfy: html.unescape twice, strip, every run
// of regex \s (Unicode White_Space) replaced by one space, strip. Python's str.strip also
// removes U+001C..U+001F, which \s does not match.
func Clean(text string) string {
	text = strings.TrimFunc(html.UnescapeString(html.UnescapeString(text)), pyIsSpace)
	var b strings.Builder
	b.Grow(len(text))
	space := false
	for _, r := range text {
		if unicode.IsSpace(r) {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return strings.TrimFunc(b.String(), pyIsSpace)
}

// pyIsSpace is Python's str.isspace for one character.
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }
