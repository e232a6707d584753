package clip

import (
	"html"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// cleanText applies openai/CLIP's basic_clean and whitespace_clean followed by lower():
// html.unescape twice, strip, collapse whitespace runs to one space, strip, lower-case.
func cleanText(text string) string {
	text = pyHTMLUnescape(pyHTMLUnescape(text))
	var b strings.Builder
	b.Grow(len(text))
	pendingSpace := false
	for _, r := range text {
		if pyIsSpace(r) {
			pendingSpace = b.Len() > 0
			continue
		}
		if pendingSpace {
			b.WriteByte(' ')
			pendingSpace = false
		}
		b.WriteRune(r)
	}
	return pyLower(b.String())
}

// pyIsSpace reports whether Python's str.isspace (and re's \s) holds for r: Unicode
// White_Space plus the information separators U+001C..U+001F.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pyLower is Python's str.lower(): the full lower-case mapping, which differs from the simple
// mapping of unicode.ToLower for U+0130 (to "i" + U+0307) and for capital sigma, which becomes
// final sigma at the end of a word (Unicode's Final_Sigma condition).
func pyLower(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i, r := range rs {
		switch r {
		case 0x130:
			b.WriteString("i\u0307")
		case 0x3a3:
			if finalSigma(rs, i) {
				b.WriteRune(0x3c2)
			} else {
				b.WriteRune(0x3c3)
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma is CPython's handle_capital_sigma: \p{cased}\p{case-ignorable}* before and no
// \p{case-ignorable}*\p{cased} after position i.
func finalSigma(rs []rune, i int) bool {
	j := i - 1
	for j >= 0 && isCaseIgnorable(rs[j]) {
		j--
	}
	if j < 0 || !isCased(rs[j]) {
		return false
	}
	j = i + 1
	for j < len(rs) && isCaseIgnorable(rs[j]) {
		j++
	}
	return j == len(rs) || !isCased(rs[j])
}

func isCased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// isCaseIgnorable approximates Unicode's Case_Ignorable: Mn, Me, Cf, Lm, Sk and the
// Word_Break MidLetter, MidNumLet and Single_Quote characters.
func isCaseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', 0xb7, 0x387, 0x55f, 0x5f4, 0x2018, 0x2019, 0x2024, 0x2027,
		0xfe13, 0xfe52, 0xfe55, 0xff07, 0xff0e, 0xff1a:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// pyHTMLUnescape is Python's html.unescape. Numeric references follow Python's rules
// (Windows-1252 remapping of 0x80..0x9F, U+FFFD for 0, surrogates and out-of-range values,
// control and non-characters dropped); named references, with and without the trailing
// semicolon, use the HTML5 table of the standard library.
func pyHTMLUnescape(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] != '&' {
			b.WriteByte(s[i])
			i++
			continue
		}
		if n, out, ok := numericRef(s[i+1:]); ok {
			b.WriteString(out)
			i += 1 + n
			continue
		}
		// Named: [^\t\n\f <&#;]{1,32};?
		j, count := i+1, 0
		for j < len(s) && count < 32 {
			r, w := utf8.DecodeRuneInString(s[j:])
			if r == '\t' || r == '\n' || r == '\f' || r == ' ' || r == '<' || r == '&' || r == '#' || r == ';' {
				break
			}
			j += w
			count++
		}
		if count == 0 {
			b.WriteByte('&')
			i++
			continue
		}
		if j < len(s) && s[j] == ';' {
			j++
		}
		b.WriteString(html.UnescapeString(s[i:j]))
		i = j
	}
	return b.String()
}

// numericRef parses "#[0-9]+;?" or "#[xX][0-9a-fA-F]+;?" at the start of s (after '&'),
// returning the bytes consumed and the replacement text.
func numericRef(s string) (int, string, bool) {
	if len(s) < 2 || s[0] != '#' {
		return 0, "", false
	}
	base, start := 10, 1
	if s[1] == 'x' || s[1] == 'X' {
		base, start = 16, 2
	}
	end := start
	for end < len(s) && isDigit(s[end], base) {
		end++
	}
	if end == start {
		return 0, "", false
	}
	num, err := strconv.ParseUint(s[start:end], base, 64)
	if err != nil || num > 0x10ffff {
		num = 0x110000 // out of range: Python gives U+FFFD
	}
	n := end
	if n < len(s) && s[n] == ';' {
		n++
	}
	return n, charRef(uint32(num)), true
}

func isDigit(c byte, base int) bool {
	if c >= '0' && c <= '9' {
		return true
	}
	return base == 16 && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
}

// cp1252 is Python's html._invalid_charrefs for 0x80..0x9F.
var cp1252 = [32]rune{
	0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f,
	0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
}

func charRef(num uint32) string {
	switch {
	case num == 0:
		return "\ufffd"
	case num == 0x0d:
		return "\r"
	case num >= 0x80 && num <= 0x9f:
		return string(cp1252[num-0x80])
	case (num >= 0xd800 && num <= 0xdfff) || num > 0x10ffff:
		return "\ufffd"
	case (num >= 0x1 && num <= 0x8) || num == 0xb || (num >= 0xe && num <= 0x1f) || num == 0x7f ||
		(num >= 0xfdd0 && num <= 0xfdef) || num&0xfffe == 0xfffe:
		return ""
	}
	return string(rune(num))
}

// splitWords is the openai/CLIP pre-tokenizer, the regex
//
//	<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+
//
// applied with findall to cleaned (lower-cased, single-spaced) text. fn gets each match.
func splitWords(text string, fn func(word string)) {
	for i := 0; i < len(text); {
		rest := text[i:]
		switch {
		case strings.HasPrefix(rest, startToken):
			fn(startToken)
			i += len(startToken)
			continue
		case strings.HasPrefix(rest, endToken):
			fn(endToken)
			i += len(endToken)
			continue
		case rest[0] == '\'':
			if n := contraction(rest); n > 0 {
				fn(rest[:n])
				i += n
				continue
			}
		}
		r, w := utf8.DecodeRuneInString(rest)
		switch {
		case unicode.IsLetter(r):
			n := w
			for n < len(rest) {
				r2, w2 := utf8.DecodeRuneInString(rest[n:])
				if !unicode.IsLetter(r2) {
					break
				}
				n += w2
			}
			fn(rest[:n])
			i += n
		case unicode.IsNumber(r):
			fn(rest[:w])
			i += w
		case pyIsSpace(r):
			i += w
		default:
			n := w
			for n < len(rest) {
				r2, w2 := utf8.DecodeRuneInString(rest[n:])
				if unicode.IsLetter(r2) || unicode.IsNumber(r2) || pyIsSpace(r2) {
					break
				}
				n += w2
			}
			fn(rest[:n])
			i += n
		}
	}
}

// contraction returns the length of 's 't 're 've 'm 'll 'd at the start of s (case-insensitive, as
// the pattern is compiled with IGNORECASE), or 0.
func contraction(s string) int {
	if len(s) < 2 {
		return 0
	}
	switch s[1] | 0x20 {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if len(s) >= 3 && s[2]|0x20 == 'e' {
			return 3
		}
	case 'l':
		if len(s) >= 3 && s[2]|0x20 == 'l' {
			return 3
		}
	}
	return 0
}
