package whispertokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// text200 is a 200-word English paragraph with punctuation and numbers.
var text200 = strings.TrimSpace(strings.Repeat("In 1969, the crew of Apollo 11 landed on the Moon; "+
	"it's a story we've all heard, told again and again by teachers, parents and friends. ", 7)) +
	" Forty-nine more words follow here to reach two hundred words in total for this small benchmark sample text."

func BenchmarkEncode200Words(b *testing.B) {
	tok := newTokenizer(b, cfgMulti99)
	require.Equal(b, 200, len(strings.Fields(text200)))
	b.SetBytes(int64(len(text200)))
	var ids []int
	b.ReportAllocs()
	for b.Loop() {
		ids = tok.AppendEncode(ids[:0], text200)
	}
}

func BenchmarkDecode200Words(b *testing.B) {
	tok := newTokenizer(b, cfgMulti99)
	ids := tok.Encode(text200)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tok.Decode(ids); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamDecode200Words(b *testing.B) {
	tok := newTokenizer(b, cfgMulti99)
	ids := tok.Encode(text200)
	b.ReportAllocs()
	for b.Loop() {
		sd := tok.NewStreamDecoder()
		for _, id := range ids {
			if _, err := sd.Push(id); err != nil {
				b.Fatal(err)
			}
		}
		sd.Flush()
	}
}

// FuzzRoundTrip: for any valid UTF-8 text, the pieces cover the text exactly, every id is a
// text token, and decoding the ids gives the text back, whole and streamed.
// Seeds are in testdata/fuzz/FuzzRoundTrip; run longer by hand with
// go test -run '^$' -fuzz FuzzRoundTrip ./runners/whisper/whispertokenizer/
func FuzzRoundTrip(f *testing.F) {
	tok := newTokenizer(f, cfgMulti99)
	f.Fuzz(func(t *testing.T, text string) {
		var sb strings.Builder
		splitPieces(text, func(p string) {
			if p == "" {
				t.Fatal("empty piece")
			}
			sb.WriteString(p)
		})
		require.Equal(t, text, sb.String())
		ids := tok.Encode(text)
		for _, id := range ids {
			require.Less(t, id, tok.EOT())
		}
		if !utf8.ValidString(text) {
			return
		}
		got, err := tok.DecodeText(ids)
		require.NoError(t, err)
		require.Equal(t, text, got)
		sd := tok.NewStreamDecoder()
		sb.Reset()
		for _, id := range ids {
			s, err := sd.Push(id)
			require.NoError(t, err)
			sb.WriteString(s)
		}
		sb.WriteString(sd.Flush())
		require.Equal(t, text, sb.String())
	})
}
