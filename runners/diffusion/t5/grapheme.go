package t5

import (
	"unicode"
	"unicode/utf8"
)

// Grapheme_Cluster_Break classes of Unicode UAX #29.
type gcb uint8

const (
	gcbOther gcb = iota
	gcbCR
	gcbLF
	gcbControl
	gcbExtend
	gcbZWJ
	gcbRI
	gcbPrepend
	gcbSpacingMark
	gcbL
	gcbV
	gcbT
	gcbLV
	gcbLVT
)

// spacingMarkExceptions are Mc characters that UAX #29 does not class as SpacingMark.
var spacingMarkExceptions = map[rune]bool{
	0x102B: true, 0x102C: true, 0x1038: true, 0x1062: true, 0x1063: true, 0x1064: true,
	0x1067: true, 0x1068: true, 0x1069: true, 0x106A: true, 0x106B: true, 0x106C: true,
	0x106D: true, 0x1083: true, 0x1087: true, 0x1088: true, 0x1089: true, 0x108A: true,
	0x108B: true, 0x108C: true, 0x108F: true, 0x109A: true, 0x109B: true, 0x109C: true,
	0x1A61: true, 0x1A63: true, 0x1A64: true, 0xAA7B: true, 0xAA7D: true, 0x11720: true,
	0x11721: true,
}

// graphemeClass returns r's Grapheme_Cluster_Break class from Go's Unicode tables.
func graphemeClass(r rune) gcb {
	if r < 0x7F && r >= 0x20 {
		return gcbOther
	}
	switch {
	case r == '\r':
		return gcbCR
	case r == '\n':
		return gcbLF
	case r == 0x200D:
		return gcbZWJ
	case r >= 0x1F1E6 && r <= 0x1F1FF:
		return gcbRI
	case r >= 0x1F3FB && r <= 0x1F3FF: // emoji modifiers
		return gcbExtend
	case r >= 0xAC00 && r <= 0xD7A3:
		if (r-0xAC00)%28 == 0 {
			return gcbLV
		}
		return gcbLVT
	case r >= 0x1100 && r <= 0x115F, r >= 0xA960 && r <= 0xA97C:
		return gcbL
	case r >= 0x1160 && r <= 0x11A7, r >= 0xD7B0 && r <= 0xD7C6:
		return gcbV
	case r >= 0x11A8 && r <= 0x11FF, r >= 0xD7CB && r <= 0xD7FB:
		return gcbT
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Other_Grapheme_Extend):
		return gcbExtend
	case r == 0x0E33 || r == 0x0EB3:
		return gcbSpacingMark
	case unicode.Is(unicode.Mc, r) && !spacingMarkExceptions[r]:
		return gcbSpacingMark
	case unicode.Is(unicode.Prepended_Concatenation_Mark, r):
		return gcbPrepend
	case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp):
		return gcbControl
	}
	return gcbOther
}

// extendedPictographic approximates the Extended_Pictographic property (absent from Go's
// tables) by the blocks that hold it; it only decides GB11 (emoji ZWJ sequences).
func extendedPictographic(r rune) bool {
	if r < 0xA9 {
		return false
	}
	switch {
	case r == 0xA9, r == 0xAE, r == 0x203C, r == 0x2049, r == 0x2122, r == 0x2139,
		r >= 0x2194 && r <= 0x21AA, r >= 0x231A && r <= 0x23FF, r >= 0x25AA && r <= 0x25FE,
		r >= 0x2600 && r <= 0x27BF, r >= 0x2934 && r <= 0x2935, r >= 0x2B05 && r <= 0x2B55,
		r == 0x3030, r == 0x303D, r == 0x3297, r == 0x3299:
		return true
	case r >= 0x1F000 && r <= 0x1FAFF:
		return !(r >= 0x1F1E6 && r <= 0x1F1FF) && !(r >= 0x1F3FB && r <= 0x1F3FF)
	case r >= 0x1FC00 && r <= 0x1FFFD:
		return true
	}
	return false
}

// nextGrapheme returns the byte length of the extended grapheme cluster at the start of s
// (UAX #29 rules GB3–GB13 without GB9c's Indic conjuncts). s must be valid UTF-8 and non-empty.
func nextGrapheme(s string) int {
	r, n := utf8.DecodeRuneInString(s)
	prev := graphemeClass(r)
	pict := extendedPictographic(r) // GB11: ExtPict Extend* seen, waiting for ZWJ
	pictZWJ := false                // GB11: ExtPict Extend* ZWJ seen
	riCount := 0
	if prev == gcbRI {
		riCount = 1
	}
	for n < len(s) {
		r, size := utf8.DecodeRuneInString(s[n:])
		cur := graphemeClass(r)
		if !joins(prev, cur, pictZWJ && extendedPictographic(r), riCount) {
			break
		}
		n += size
		switch {
		case extendedPictographic(r):
			pict, pictZWJ = true, false
		case cur == gcbExtend:
			pictZWJ = false
		case cur == gcbZWJ:
			pictZWJ, pict = pict, false
		default:
			pict, pictZWJ = false, false
		}
		if cur == gcbRI {
			riCount++
		} else {
			riCount = 0
		}
		prev = cur
	}
	return n
}

// joins reports whether UAX #29 forbids a break between classes prev and cur.
func joins(prev, cur gcb, gb11 bool, riCount int) bool {
	switch {
	case prev == gcbCR && cur == gcbLF: // GB3
		return true
	case prev == gcbCR || prev == gcbLF || prev == gcbControl: // GB4
		return false
	case cur == gcbCR || cur == gcbLF || cur == gcbControl: // GB5
		return false
	case prev == gcbL && (cur == gcbL || cur == gcbV || cur == gcbLV || cur == gcbLVT): // GB6
		return true
	case (prev == gcbLV || prev == gcbV) && (cur == gcbV || cur == gcbT): // GB7
		return true
	case (prev == gcbLVT || prev == gcbT) && cur == gcbT: // GB8
		return true
	case cur == gcbExtend || cur == gcbZWJ: // GB9
		return true
	case cur == gcbSpacingMark: // GB9a
		return true
	case prev == gcbPrepend: // GB9b
		return true
	case prev == gcbZWJ && gb11: // GB11
		return true
	case prev == gcbRI && cur == gcbRI: // GB12, GB13
		return riCount%2 == 1
	}
	return false
}
