// Package textnorm is the text side of HEAD's SpeechT5 runner (tt_model_runners/speecht5_runner.py):
// normalize_text_for_tts, which spells numbers out as num2words does in English (ordinals,
// decimals, number+unit, plain integers, in that order), and chunk_text, which splits a long text
// into chunks of at most 256 characters at sentence ends, cutting a sentence past 250 tokens at
// clause ends. Python's re semantics are kept: \d is any Unicode decimal digit, \b a Unicode word
// boundary, \s Python's whitespace, and lengths count code points.
package textnorm

import (
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// isWord is Python's \w on str: alphanumeric (letters and every numeric category) or '_'.
func isWord(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

// isDigit is Python's \d on str: a Unicode decimal digit (Nd).
func isDigit(r rune) bool { return unicode.Is(unicode.Nd, r) }

// isSpace is Python's \s and str.isspace: Unicode white space plus the separators \x1c-\x1f.
func isSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// digitValue is the value of a decimal digit (Nd ranges come in runs of ten from 0).
func digitValue(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return 0
}

// asciiDigits is a run of decimal digits as ASCII, as Python's int() and float() read it.
func asciiDigits(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteByte(byte('0' + digitValue(r)))
	}
	return b.String()
}

// text is a string as runes with Python's boundary tests.
type text []rune

// boundaryBefore: a match of \b\d may start at i (the rune at i is a digit, a word rune).
func (t text) startsRun(i int) bool { return isDigit(t[i]) && (i == 0 || !isWord(t[i-1])) }

// boundaryAt is \b after a word rune at i-1: the end of the text or a non-word rune at i.
func (t text) endAt(i int) bool { return i >= len(t) || !isWord(t[i]) }

// digitsFrom returns the end of the digit run starting at i.
func (t text) digitsFrom(i int) int {
	for i < len(t) && isDigit(t[i]) {
		i++
	}
	return i
}

// sub is re.sub with a matcher that, at a position where a match may start, returns the
// match's end and replacement (ok false when there is none).
func sub(s string, match func(t text, i int) (end int, repl string, ok bool)) string {
	t := text(s)
	var b strings.Builder
	for i := 0; i < len(t); {
		if t.startsRun(i) {
			if end, repl, ok := match(t, i); ok {
				b.WriteString(repl)
				i = end
				continue
			}
		}
		b.WriteRune(t[i])
		i++
	}
	return b.String()
}

func bigOf(digits string) *big.Int {
	n, _ := new(big.Int).SetString(asciiDigits(digits), 10)
	return n
}

// foldEq reports whether r matches the ASCII letter c under Python's re.IGNORECASE (Unicode).
func foldEq(r rune, c rune) bool {
	if unicode.ToLower(r) == c {
		return true
	}
	return c == 's' && r == 'ſ' // LATIN SMALL LETTER LONG S folds to s
}

// Normalize is normalize_text_for_tts: ordinals ("1st"), then decimals ("133.9"), then a
// number with a unit ("250cc" → "two hundred and fifty cc"), then plain integers, each
// spelled out as num2words does in English. A number too large for num2words (a thousand
// centillion or more), where HEAD's runner fails, is left as digits.
func Normalize(s string) string {
	// \b(\d+)(?:st|nd|rd|th)\b, re.IGNORECASE
	s = sub(s, func(t text, i int) (int, string, bool) {
		j := t.digitsFrom(i)
		if j+2 > len(t) || !t.endAt(j+2) {
			return 0, "", false
		}
		ok := false
		for _, suf := range []string{"st", "nd", "rd", "th"} {
			if foldEq(t[j], rune(suf[0])) && foldEq(t[j+1], rune(suf[1])) {
				ok = true
			}
		}
		if !ok {
			return 0, "", false
		}
		w, err := Ordinal(bigOf(string(t[i:j])))
		return j + 2, w, err == nil
	})
	// \b\d+\.\d+\b
	s = sub(s, func(t text, i int) (int, string, bool) {
		j := t.digitsFrom(i)
		if j >= len(t) || t[j] != '.' || j+1 >= len(t) || !isDigit(t[j+1]) {
			return 0, "", false
		}
		k := t.digitsFrom(j + 1)
		if !t.endAt(k) {
			return 0, "", false
		}
		v, err := strconv.ParseFloat(asciiDigits(string(t[i:j]))+"."+asciiDigits(string(t[j+1:k])), 64)
		if err != nil && !strings.Contains(err.Error(), "range") {
			return 0, "", false
		}
		w, err := Float(v)
		return k, w, err == nil
	})
	// \b(\d+)([a-zA-Z]+)\b
	s = sub(s, func(t text, i int) (int, string, bool) {
		j := t.digitsFrom(i)
		k := j
		for k < len(t) && (t[k] >= 'a' && t[k] <= 'z' || t[k] >= 'A' && t[k] <= 'Z') {
			k++
		}
		if k == j || !t.endAt(k) {
			return 0, "", false
		}
		w, err := Cardinal(bigOf(string(t[i:j])))
		return k, w + " " + string(t[j:k]), err == nil
	})
	// \b\d+\b
	return sub(s, func(t text, i int) (int, string, bool) {
		j := t.digitsFrom(i)
		if !t.endAt(j) {
			return 0, "", false
		}
		w, err := Cardinal(bigOf(string(t[i:j])))
		return j, w, err == nil
	})
}

// runeLen is Python's len of a str.
func runeLen(s string) int { return utf8.RuneCountInString(s) }
