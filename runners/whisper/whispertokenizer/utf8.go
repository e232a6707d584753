package whispertokenizer

import (
	"fmt"
	"unicode/utf8"
)

type seqStatus uint8

const (
	seqOK        seqStatus = iota // a complete, valid character of n bytes
	seqInvalid                    // n bytes (the maximal valid prefix, >= 1) to replace by one U+FFFD
	seqTruncated                  // all n = len(b) bytes are a valid prefix of a longer character
)

// scanUTF8 looks at the character starting at b[0] (len(b) > 0) with the rules of Python's
// UTF-8 decoder (and the Unicode "maximal subpart" practice): an invalid start byte is
// replaced on its own; a valid start followed by a byte that cannot continue it is replaced
// together with the continuation bytes accepted so far, and the offending byte is looked at
// again as the start of the next character.
func scanUTF8(b []byte) (int, seqStatus) {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF) // range of the second byte
	switch {
	case c < 0x80:
		return 1, seqOK
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1, seqInvalid
	}
	for k := 1; k <= need; k++ {
		if k >= len(b) {
			return len(b), seqTruncated
		}
		if b[k] < lo || b[k] > hi {
			return k, seqInvalid
		}
		lo, hi = 0x80, 0xBF
	}
	return need + 1, seqOK
}

// appendDecoded appends the text of b to out and returns the number of bytes consumed. With
// final false it stops before a truncated character at the end of b (it may be completed by
// later bytes); with final true such a tail becomes one U+FFFD.
func appendDecoded(out []byte, b []byte, final bool) ([]byte, int) {
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			out = append(out, b[i])
			i++
			continue
		}
		n, st := scanUTF8(b[i:])
		switch st {
		case seqOK:
			out = append(out, b[i:i+n]...)
		case seqTruncated:
			if !final {
				return out, i
			}
			out = utf8.AppendRune(out, utf8.RuneError)
		case seqInvalid:
			out = utf8.AppendRune(out, utf8.RuneError)
		}
		i += n
	}
	return out, i
}

// decodeUTF8Replace is Python's bytes.decode("utf-8", errors="replace").
func decodeUTF8Replace(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out, _ := appendDecoded(make([]byte, 0, len(b)+8), b, true)
	return string(out)
}

// StreamDecoder turns text tokens into text as they are produced, emitting only complete
// UTF-8 characters: bytes of a character split across tokens are held back until the
// character is complete. Special tokens and timestamps are skipped, so the concatenation of
// everything it returns, including Flush, equals DecodeText of all the ids pushed.
// A StreamDecoder is not safe for concurrent use.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
	out     []byte
}

// NewStreamDecoder starts a stream.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// Push adds one token and returns the text that became complete ("" if none).
func (s *StreamDecoder) Push(id int) (string, error) {
	switch {
	case id < 0 || id >= s.t.NVocab():
		return "", fmt.Errorf("%w: %d", ErrUnknownToken, id)
	case id >= s.t.eot:
		return "", nil
	}
	s.pending = append(s.pending, s.t.ranks.dec[id]...)
	var n int
	s.out, n = appendDecoded(s.out[:0], s.pending, false)
	s.pending = s.pending[:copy(s.pending, s.pending[n:])]
	return string(s.out), nil
}

// Flush ends the stream: a character still incomplete becomes U+FFFD, as the full decode
// would render it. The decoder is then empty and may be reused.
func (s *StreamDecoder) Flush() string {
	var n int
	s.out, n = appendDecoded(s.out[:0], s.pending, true)
	s.pending = s.pending[:copy(s.pending, s.pending[n:])]
	return string(s.out)
}
