package t5

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"
)

// charsmap is sentencepiece's precompiled normalization rule set: a Darts-clone double-array
// trie over source byte strings whose values are offsets into a blob of NUL-terminated
// replacement strings. Its layout is <trie size uint32 LE><trie units uint32 LE...><strings>.
type charsmap struct {
	units      []uint32
	normalized string
}

// maxCharsmapResults is sentencepiece's Normalizer::kMaxTrieResultsSize: rules beyond the
// 32nd shared prefix are never consulted.
const maxCharsmapResults = 32

func parseCharsmap(blob []byte) (*charsmap, error) {
	if len(blob) <= 4 {
		return nil, fmt.Errorf("%w: precompiled charsmap of %d bytes", ErrInvalidModel, len(blob))
	}
	size := binary.LittleEndian.Uint32(blob)
	if uint64(size) >= uint64(len(blob)) || size%4 != 0 {
		return nil, fmt.Errorf("%w: precompiled charsmap trie size %d of a %d-byte blob", ErrInvalidModel, size, len(blob))
	}
	body := blob[4:]
	units := make([]uint32, size/4)
	for i := range units {
		units[i] = binary.LittleEndian.Uint32(body[4*i:])
	}
	if len(units) == 0 {
		return nil, fmt.Errorf("%w: empty precompiled charsmap trie", ErrInvalidModel)
	}
	return &charsmap{units: units, normalized: string(body[size:])}, nil
}

// Darts-clone unit accessors.
func dartsHasLeaf(u uint32) bool  { return (u>>8)&1 == 1 }
func dartsValue(u uint32) uint32  { return u & (1<<31 - 1) }
func dartsLabel(u uint32) uint32  { return u & (1<<31 | 0xFF) }
func dartsOffset(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }
func (c *charsmap) unit(i uint32) (uint32, bool) {
	if int(i) >= len(c.units) {
		return 0, false
	}
	return c.units[i], true
}

// longest returns the replacement of the longest rule matching a prefix of s and that
// prefix's length, or n == 0 when no rule matches. Like sentencepiece it only considers the
// first maxCharsmapResults matches along the path.
func (c *charsmap) longest(s string) (repl string, n int) {
	pos := uint32(0)
	u, ok := c.unit(pos)
	if !ok {
		return "", 0
	}
	pos ^= dartsOffset(u)
	found := 0
	value := uint32(0)
	for i := 0; i < len(s) && found < maxCharsmapResults; i++ {
		b := uint32(s[i])
		pos ^= b
		if u, ok = c.unit(pos); !ok || dartsLabel(u) != b {
			break
		}
		pos ^= dartsOffset(u)
		if dartsHasLeaf(u) {
			leaf, ok := c.unit(pos)
			if !ok {
				break
			}
			found++
			n, value = i+1, dartsValue(leaf)
		}
	}
	if n == 0 {
		return "", 0
	}
	return c.text(value), n
}

// shortest returns the replacement of the shortest rule matching a prefix of s (the first
// result of the trie's common-prefix search), as tokenizers' spm_precompiled does.
func (c *charsmap) shortest(s string) (string, bool) {
	pos := uint32(0)
	u, ok := c.unit(pos)
	if !ok {
		return "", false
	}
	pos ^= dartsOffset(u)
	for i := 0; i < len(s); i++ {
		b := uint32(s[i])
		pos ^= b
		if u, ok = c.unit(pos); !ok || dartsLabel(u) != b {
			return "", false
		}
		pos ^= dartsOffset(u)
		if dartsHasLeaf(u) {
			leaf, ok := c.unit(pos)
			if !ok {
				return "", false
			}
			return c.text(dartsValue(leaf)), true
		}
	}
	return "", false
}

// text returns the NUL-terminated replacement at offset value.
func (c *charsmap) text(value uint32) string {
	if int(value) >= len(c.normalized) {
		return ""
	}
	rest := c.normalized[value:]
	if end := strings.IndexByte(rest, 0); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// apply is tokenizers' Precompiled normalizer (spm_precompiled), which differs from
// sentencepiece's: it walks extended grapheme clusters; a cluster under 6 bytes with a rule
// matching a prefix of it is replaced whole by the shortest such rule's output; otherwise each
// character is replaced by its own rule, if any. So compositions across clusters or inside
// clusters of 6 bytes or more (half-width katakana with a voiced mark, Hangul jamo) are not
// applied, where sentencepiece applies them.
func (c *charsmap) apply(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for s != "" {
		g := s[:nextGrapheme(s)]
		s = s[len(g):]
		if len(g) < 6 {
			if repl, ok := c.shortest(g); ok {
				b.WriteString(repl)
				continue
			}
		}
		for g != "" {
			_, size := utf8.DecodeRuneInString(g)
			if repl, ok := c.shortest(g[:size]); ok {
				b.WriteString(repl)
			} else {
				b.WriteString(g[:size])
			}
			g = g[size:]
		}
	}
	return b.String()
}
