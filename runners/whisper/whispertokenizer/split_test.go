package whispertokenizer

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Expected pieces from Python's regex module with whisper's pat_str:
//
//	python3 -c "import regex; print(regex.findall(r\"\"\"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+\"\"\", TEXT))"
func TestSplitPieces(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{" ", []string{" "}},
		{"   ", []string{"   "}},
		{"Hello world", []string{"Hello", " world"}},
		{"I'm here, you're not; it'll be we've he'd", []string{"I", "'m", " here", ",", " you", "'re", " not", ";", " it", "'ll", " be", " we", "'ve", " he", "'d"}},
		{"'S 'x ''s", []string{"'", "S", " '", "x", " ''", "s"}},
		{"  multiple   spaces\tand\nnewlines  ", []string{" ", " multiple", "  ", " spaces", "\t", "and", "\n", "newlines", "  "}},
		{"x \t\ny", []string{"x", " \t", "\n", "y"}},
		{"abc123def ١٢٣ Ⅻ", []string{"abc", "123", "def", " ١٢٣", " Ⅻ"}},
		{" !!! ?? .", []string{" !!!", " ??", " ."}},
		{"a\u00a0b\u3000 c", []string{"a", "\u00a0", "b", "\u3000", " c"}},
		{"naïve Größe Привет 我们", []string{"naïve", " Größe", " Привет", " 我们"}},
		{"🙂👍🏽 ok", []string{"🙂👍🏽", " ok"}},
		{" \n", []string{" \n"}},
		{"don't", []string{"don", "'t"}},
		{"end.   ", []string{"end", ".", "   "}},
		{"\x1c\x1f x", []string{"\x1c\x1f", " x"}},
		// Not valid UTF-8 (impossible in Python): invalid bytes are "other" characters.
		{"a\xff\xfeb \xc3", []string{"a", "\xff\xfe", "b", " \xc3"}},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			var got []string
			splitPieces(tc.text, func(p string) { got = append(got, p) })
			require.Equal(t, tc.want, got)
		})
	}
}

// Expected strings from Python:
//
//	python3 -c "print(repr(bytes.fromhex(HEX).decode('utf-8', 'replace')))"
func TestDecodeUTF8Replace(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"abc", "abc"},
		{"\xe2\x82", "\ufffd"},
		{"\xe2\x82A", "\ufffdA"},
		{"\x80", "\ufffd"},
		{"\xc0\x80", "\ufffd\ufffd"},
		{"\xe0\x80\x80", "\ufffd\ufffd\ufffd"},
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"},
		{"\xf0\x9f\x99", "\ufffd"},
		{"\xf0\x9f\x99\x82", "\U0001f642"},
		{"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"},
		{"\xf5", "\ufffd"},
		{"\xff\xfe", "\ufffd\ufffd"},
		{"A\xc3", "A\ufffd"},
		{"\xc3\xa9\xa9", "\u00e9\ufffd"},
		{"\xe2\x28\xa1", "\ufffd(\ufffd"},
		{"\xf0\x28\x8c\x28", "\ufffd(\ufffd("},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, decodeUTF8Replace([]byte(tc.in)), "%x", tc.in)
	}
}
