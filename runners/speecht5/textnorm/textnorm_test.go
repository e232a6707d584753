package textnorm

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Expected values are num2words 0.5 (lang_EN) and HEAD's normalize_text_for_tts; the golden
// test (golden_test.go) checks a larger corpus against them when Debian's python3-num2words is
// installed.
func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"9", "nine"},
		{"122 apples", "one hundred and twenty-two apples"},
		{"1st 2nd 3rd 4th 23rd 101st 12th 20th", "first second third fourth twenty-third one hundred and first twelfth twentieth"},
		{"133.9", "one hundred and thirty-three point nine"},
		{"0.05", "zero point zero five"},
		{"2.50", "two point five"},
		{"3.0", "three"},
		{"250cc and 5km", "two hundred and fifty cc and five km"},
		{"1001 nights", "one thousand and one nights"},
		{"1100", "one thousand, one hundred"},
		{"1234567", "one million, two hundred and thirty-four thousand, five hundred and sixty-seven"},
		{"2000000", "two million"},
		{"0", "zero"},
		{"007", "seven"},
		{"A1st", "A1st"},
		{"x2", "x2"},
		{"12abc3", "12abc3"},
		{"1.2.3", "one point two.three"},
		{"v1.5x", "v1.five x"}, // "5x" after "." is a number with a unit, as in Python
		{"1ST", "first"},
		{"٣ apples", "three apples"},
		{"3_", "3_"},
		{"route 66.", "route sixty-six."},
	} {
		require.Equal(t, tc.want, Normalize(tc.in), tc.in)
	}
}

func TestOrdinalAndFloat(t *testing.T) {
	w, err := Float(0.1)
	require.NoError(t, err)
	require.Equal(t, "zero point one", w)
	w, err = Float(1e-05)
	require.NoError(t, err)
	require.Equal(t, "zero point zero zero zero zero one", w)
	require.Equal(t, "ninety-nine", CardinalInt(99))
	require.Equal(t, "one hundred", CardinalInt(100))
	// A number too big for num2words stays as digits.
	big := strings.Repeat("9", 400)
	require.Equal(t, big, Normalize(big))
}

func count(s string) int { return len([]rune(s)) + 2 } // a char model: "▁" + chars + </s>

func TestChunk(t *testing.T) {
	short := "  Hello there.  "
	require.Equal(t, []string{short}, Chunk(short, DefaultChunkSize, count), "short text is one chunk, unstripped")

	sentence := strings.Repeat("word ", 20) + "end." // 104 chars
	text := strings.Join([]string{sentence, sentence, sentence, sentence}, "  \n")
	chunks := Chunk(text, DefaultChunkSize, count)
	require.Len(t, chunks, 2)
	for _, c := range chunks {
		require.LessOrEqual(t, len(c), DefaultChunkSize)
		require.True(t, strings.HasSuffix(c, "end."))
	}
	require.Equal(t, sentence+" "+sentence, chunks[0])

	// A sentence past 250 tokens is cut at clause ends.
	clause := strings.Repeat("x", 100) + ","
	long := clause + " " + clause + " " + clause + " " + strings.Repeat("y", 50) + "."
	got := Chunk(long, DefaultChunkSize, count)
	for _, c := range got {
		require.LessOrEqual(t, count(c), MaxEncoderTokens, c)
	}
	require.Equal(t, long, strings.Join(got, " "))

	// Without a tokenizer nothing is cut inside a sentence.
	require.Equal(t, []string{long}, Chunk(long, DefaultChunkSize, nil))
}

func TestFit(t *testing.T) {
	long := strings.Repeat("abcdefghi ", 40) // 400 chars, no clause marks
	parts := Fit(long, MaxEncoderTokens, count)
	require.Greater(t, len(parts), 1)
	for _, p := range parts {
		require.LessOrEqual(t, count(p), MaxEncoderTokens)
	}
	require.Equal(t, strings.Join(strings.Fields(long), " "), strings.Join(parts, " "))
	noSpace := strings.Repeat("z", 600)
	parts = Fit(noSpace, MaxEncoderTokens, count)
	require.Equal(t, noSpace, strings.Join(parts, ""))
	require.Equal(t, []string{"short"}, Fit("short", MaxEncoderTokens, count))
}

func TestLead(t *testing.T) {
	long := "The first sentence is short, but this one goes on and on for quite a while longer than the budget allows."
	for _, tc := range []struct {
		in    string
		limit int
		want  []string
	}{
		{"Short text.", 64, []string{"Short text."}},
		// The clause end at 28 is in the first half of the budget: the last space is used.
		{long, 64, []string{"The first sentence is short, but this one goes on and on for", "quite a while longer than the budget allows."}},
		{"One, two three four five six seven eight nine ten eleven twelve, and more words to come.", 64,
			[]string{"One, two three four five six seven eight nine ten eleven twelve,", "and more words to come."}},
		{strings.Repeat("word ", 30), 64, []string{strings.TrimSpace(strings.Repeat("word ", 13)), strings.TrimSpace(strings.Repeat("word ", 17))}},
		{strings.Repeat("x", 100), 64, []string{strings.Repeat("x", 100)}},
	} {
		got := Lead(tc.in, tc.limit)
		require.Equal(t, tc.want, got, tc.in)
		require.LessOrEqual(t, len([]rune(got[0])), max(tc.limit, len([]rune(tc.in))*boolInt(len(got) == 1)))
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
