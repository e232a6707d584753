package t5

import (
	"strings"
	"unicode/utf8"
)

// spaceSymbol is U+2581 LOWER ONE EIGHTH BLOCK, sentencepiece's escaped whitespace.
const spaceSymbol = "\u2581"

// spmNormalizer is sentencepiece's normalizer::Normalizer (v0.1.97).
type spmNormalizer struct {
	cm             *charsmap // nil: no rules (identity)
	user           *trie     // user-defined symbols, copied verbatim; nil when none
	addDummyPrefix bool
	removeExtra    bool
	escape         bool
	wsSuffix       bool // trainer_spec.treat_whitespace_as_suffix
}

// prefix normalizes the longest rule at the start of s: it returns the replacement text and the
// number of input bytes consumed (at least 1 for non-empty s).
func (n *spmNormalizer) prefix(s string) (string, int) {
	if n.user != nil {
		if _, l := n.user.longestPrefix(s); l > 0 {
			return s[:l], l
		}
	}
	if n.cm != nil {
		if repl, l := n.cm.longest(s); l > 0 {
			return repl, l
		}
	}
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size <= 1 {
		// A malformed byte becomes U+FFFD and only that byte is consumed.
		return "\uFFFD", 1
	}
	return s[:size], size
}

// normalize returns the normalized text that the Unigram model segments.
func (n *spmNormalizer) normalize(s string) string {
	if s == "" {
		return ""
	}
	if n.removeExtra {
		for s != "" {
			p, l := n.prefix(s)
			if p != " " {
				break
			}
			s = s[l:]
		}
		if s == "" {
			return ""
		}
	}
	ws := " "
	if n.escape {
		ws = spaceSymbol
	}
	var b strings.Builder
	b.Grow(len(s) * 3)
	if !n.wsSuffix && n.addDummyPrefix {
		b.WriteString(ws)
	}
	prevSpace := n.removeExtra
	for s != "" {
		p, l := n.prefix(s)
		for prevSpace && strings.HasPrefix(p, " ") {
			p = p[1:]
		}
		if p != "" {
			if n.escape {
				for i := 0; i < len(p); i++ {
					if p[i] == ' ' {
						b.WriteString(spaceSymbol)
					} else {
						b.WriteByte(p[i])
					}
				}
			} else {
				b.WriteString(p)
			}
			prevSpace = strings.HasSuffix(p, " ")
		}
		s = s[l:]
		if !n.removeExtra {
			prevSpace = false
		}
	}
	out := b.String()
	if n.removeExtra {
		for strings.HasSuffix(out, ws) {
			out = out[:len(out)-len(ws)]
		}
	}
	if n.wsSuffix && n.addDummyPrefix {
		out += ws
	}
	return out
}
