// Package speecht5tokenizer is SpeechT5's text tokenizer as Hugging Face's SpeechT5Tokenizer encodes:
// the SentencePiece character model spm_char.model (read by runners/diffusion/t5, which parses
// SentencePiece models), one id per normalized character and </s> (id 2) at the end; and the
// padding of HEAD's runner to the device encoder's buckets (32, 64, 128, 160, 192, 256) with
// <pad> (id 1) and the attention mask that hides the padding.
package speecht5tokenizer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/t5"
)

// ModelFile is the SentencePiece model's name in MODEL_WEIGHTS_PATH.
const ModelFile = "spm_char.model"

// PadID is SpeechT5's <pad> id, which HEAD pads the encoder input with.
const PadID = 1

// Buckets are the encoder sequence lengths the device programs exist for (HEAD's
// WARMUP_ENCODER_SIZES); 256 is the longest (384 does not fit an n150's L1).
var Buckets = []int{32, 64, 128, 160, 192, 256}

// MaxTokens is the longest encoder input.
const MaxTokens = 256

// ErrTooLong is an input longer than the largest bucket.
var ErrTooLong = errors.New("speecht5 tokenizer: more tokens than the largest encoder bucket (256)")

// Tokenizer encodes text for SpeechT5.
type Tokenizer struct {
	sp *t5.Tokenizer // nil: the built-in table
}

// Builtin is the tokenizer of mock-device mode without spm_char.model: one id per character
// as a character model does (whitespace runs folded into one "▁", a leading "▁"), but from a
// table of its own (printable ASCII from id 4, anything else <unk> = 3), not SpeechT5's ids.
func Builtin() *Tokenizer { return &Tokenizer{} }

func builtinEncode(text string) []int {
	ids := []int{builtinSpace}
	space := true
	for _, r := range strings.TrimSpace(text) {
		switch {
		case unicode.IsSpace(r):
			if !space {
				ids = append(ids, builtinSpace)
			}
			space = true
			continue
		case r > ' ' && r < 0x7f:
			ids = append(ids, 4+int(r-' '))
		default:
			ids = append(ids, 3)
		}
		space = false
	}
	return append(ids, 2)
}

const builtinSpace = 4 // "▁" (the slot of ' ')

// Load reads spm_char.model from dir.
func Load(dir string) (*Tokenizer, error) {
	path := filepath.Join(dir, ModelFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("speecht5 tokenizer: %w", err)
	}
	return Parse(data)
}

// Parse builds a tokenizer from a SentencePiece model's bytes.
func Parse(data []byte) (*Tokenizer, error) {
	sp, err := t5.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("speecht5 tokenizer: %w", err)
	}
	return &Tokenizer{sp: sp}, nil
}

// Encode is SpeechT5Tokenizer(text).input_ids: the pieces' ids and </s>.
func (t *Tokenizer) Encode(text string) []int {
	if t.sp == nil {
		return builtinEncode(text)
	}
	return t.sp.Encode(text)
}

// Count is the number of ids Encode returns.
func (t *Tokenizer) Count(text string) int { return len(t.Encode(text)) }

// VocabSize is the number of pieces.
func (t *Tokenizer) VocabSize() int {
	if t.sp == nil {
		return 4 + 0x7f - ' '
	}
	return t.sp.VocabSize()
}

// Bucket is get_padded_encoder_seq_len: the smallest bucket that holds n ids.
func Bucket(n int) (int, error) {
	for _, b := range Buckets {
		if n <= b {
			return b, nil
		}
	}
	return 0, fmt.Errorf("%w: %d tokens", ErrTooLong, n)
}

// Pad pads ids with PadID to their bucket and returns the encoder self-attention mask of
// HEAD's runner: 0 on the real ids, -1e9 on the padding.
func Pad(ids []int) (padded []int32, mask []float32, err error) {
	b, err := Bucket(len(ids))
	if err != nil {
		return nil, nil, err
	}
	padded = make([]int32, b)
	mask = make([]float32, b)
	for i := range padded {
		if i < len(ids) {
			padded[i] = int32(ids[i])
		} else {
			padded[i], mask[i] = PadID, -1e9
		}
	}
	return padded, mask, nil
}
