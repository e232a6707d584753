package decoding

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// A toy vocabulary for the timestamp rules: text tokens 0..4, EOT 5, <|notimestamps|> 6,
// timestamps 7..11 (<|0.00|> .. <|0.08|>), first timestamp at most <|0.04|> (index 2).
var toyRules = TimestampRules{EOT: 5, NoTimestamps: 6, TimestampBegin: 7, MaxInitialTimestampIndex: 2}

func TestTimestampRules(t *testing.T) {
	flat := func() []float32 { return make([]float32, 12) } // all logits 0
	tests := []struct {
		name    string
		rules   TimestampRules
		logits  []float32
		sampled []int
		// want is the set of suppressed indices, derived from ApplyTimestampRules.apply.
		want []int
	}{
		{
			// tokens.shape[1] == sample_begin: logits[:timestamp_begin] = -inf and
			// logits[tb + max_initial_timestamp_index + 1:] = -inf -> only 7, 8, 9 remain.
			name: "first token is an early timestamp", rules: toyRules, logits: flat(),
			want: []int{0, 1, 2, 3, 4, 5, 6, 10, 11},
		},
		{
			// No max_initial_timestamp: every timestamp is allowed first.
			name: "first token without initial bound", logits: flat(),
			rules: TimestampRules{EOT: 5, NoTimestamps: 6, TimestampBegin: 7, MaxInitialTimestampIndex: -1},
			want:  []int{0, 1, 2, 3, 4, 5, 6},
		},
		{
			// seq [8]: last is a timestamp and len < 2 counts as "penultimate was timestamp"
			// -> logits[tb:] = -inf; timestamps non-empty, so logits[tb:8+1] = -inf too.
			// Text and EOT stay. Probability rule: all timestamps -inf, nothing more.
			name: "after the opening timestamp comes text", rules: toyRules, logits: flat(),
			sampled: []int{8},
			want:    []int{6, 7, 8, 9, 10, 11},
		},
		{
			// seq [7, 1]: last is text; timestamp_last = 7 + 1 -> logits[7:8] = -inf (a
			// segment has nonzero length). Probability rule with all logits 0: the remaining
			// timestamps 8..11 have total probability 4/10 (10 finite logits), the best text
			// token 1/10 -> 4/10 > 1/10, so all text (0..6) is suppressed.
			name: "after text, timestamps win by total probability", rules: toyRules, logits: flat(),
			sampled: []int{7, 1},
			want:    []int{0, 1, 2, 3, 4, 5, 6, 7},
		},
		{
			// Same state, but text token 2 has logit 2: exp(2) = 7.39 > 4 * exp(0) = 4 for the
			// four allowed timestamps, so text is kept; only 6 and 7 are suppressed.
			name: "after text, a confident text token stays", rules: toyRules,
			logits:  logitsOf(0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0),
			sampled: []int{7, 1},
			want:    []int{6, 7},
		},
		{
			// Boundary of the same rule: text logit ln(4) - 0.01 < ln(4) -> timestamps win.
			name: "after text, just below the timestamp mass", rules: toyRules,
			logits:  logitsOf(0, 0, math.Log(4)-0.01, 0, 0, 0, 0, 0, 0, 0, 0, 0),
			sampled: []int{7, 1},
			want:    []int{0, 1, 2, 3, 4, 5, 6, 7},
		},
		{
			// seq [7, 1, 9]: last timestamp, penultimate text -> logits[:eot] = -inf (close
			// the pair or end); timestamp_last = 9 (not +1) -> logits[7:9] = -inf. 9..11 and
			// EOT remain (the end timestamp may repeat as the next start). EOT has logit 2:
			// exp(2) = 7.39 > 3 * exp(0) for timestamps 9..11, so the probability rule keeps it.
			name: "a lone closing timestamp needs its pair or EOT", rules: toyRules,
			logits:  logitsOf(0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0),
			sampled: []int{7, 1, 9},
			want:    []int{0, 1, 2, 3, 4, 6, 7, 8},
		},
		{
			// Same state with flat logits: the three timestamps hold 3/4 of the probability,
			// EOT (the best token below timestamp_begin) 1/4 -> EOT is suppressed as well.
			name: "a lone closing timestamp, EOT outweighed", rules: toyRules, logits: flat(),
			sampled: []int{7, 1, 9},
			want:    []int{0, 1, 2, 3, 4, 5, 6, 7, 8},
		},
		{
			// seq [7, 1, 9, 9]: a pair -> logits[tb:] = -inf; the text must follow.
			// Timestamp_last = 9 + 1 -> logits[7:10] (already -inf).
			name: "after a pair comes text", rules: toyRules, logits: flat(),
			sampled: []int{7, 1, 9, 9},
			want:    []int{6, 7, 8, 9, 10, 11},
		},
		{
			// seq [7, 1, 9, 9, 3]: text after the pair; timestamps must exceed 9 -> 7..9
			// suppressed. Probability: 2 timestamps (10, 11) = 2/9 of the mass vs 1/9 for the
			// best text token -> text suppressed.
			name: "monotonic timestamps", rules: toyRules, logits: flat(),
			sampled: []int{7, 1, 9, 9, 3},
			want:    []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.rules.Apply(tc.logits, tc.sampled))
			require.Equal(t, tc.want, suppressedIn(tc.logits))
		})
	}
	require.ErrorIs(t, toyRules.Apply(make([]float32, 7), nil), ErrLogitsSize)
}

func TestSuppressBlank(t *testing.T) {
	// SuppressBlank.apply: only when tokens.shape[1] == sample_begin (nothing sampled yet).
	l := logitsOf(1, 2, 3, 4)
	SuppressBlank(l, nil, []int{1, 3})
	require.Equal(t, []int{1, 3}, suppressedIn(l))
	l = logitsOf(1, 2, 3, 4)
	SuppressBlank(l, []int{0}, []int{1, 3})
	require.Empty(t, suppressedIn(l))
}

func TestParseSuppressTokens(t *testing.T) {
	tests := []struct {
		spec    string
		want    []int
		wantErr bool
	}{
		{"-1", []int{-1}, false},
		{"", nil, false},
		{" 1, 2 ,-1", []int{1, 2, -1}, false},
		{"1,,2", nil, true},
		{"x", nil, true},
		{"-2", nil, true},
	}
	for _, tc := range tests {
		got, err := ParseSuppressTokens(tc.spec)
		if tc.wantErr {
			require.ErrorIs(t, err, ErrBadOption, tc.spec)
			continue
		}
		require.NoError(t, err, tc.spec)
		require.Equal(t, tc.want, got, tc.spec)
	}
}

func TestGreedy(t *testing.T) {
	id, err := Greedy(logitsOf(1, 3, 3, 2)) // torch.argmax: first maximal index
	require.NoError(t, err)
	require.Equal(t, 1, id)
	_, err = Greedy(logitsOf(inf, inf))
	require.ErrorIs(t, err, ErrNoCandidate)
	_, err = Greedy(logitsOf(math.NaN()))
	require.ErrorIs(t, err, ErrNoCandidate)
}

func TestSelectLogProb(t *testing.T) {
	// logits (0, ln 3, -inf): softmax = (1/4, 3/4, 0); greedy picks 1 with log(3/4).
	id, lp, err := Select(logitsOf(0, math.Log(3), inf), 0, nil)
	require.NoError(t, err)
	require.Equal(t, 1, id)
	require.InDelta(t, math.Log(0.75), lp, 1e-6)
	require.InDelta(t, 0.25, NoSpeechProb(logitsOf(0, math.Log(3), inf), 0), 1e-6)
}

func TestSample(t *testing.T) {
	// softmax((0, ln 3, -inf) / T): T = 1 -> (0.25, 0.75, 0); T = 2 -> weights (1, sqrt 3)
	// -> p0 = 1/(1+sqrt 3) = 0.366. 20000 draws: standard error ~0.0034, tolerance 0.015.
	logits := logitsOf(0, math.Log(3), inf)
	for _, tc := range []struct {
		temp float64
		p0   float64
	}{{1, 0.25}, {2, 1 / (1 + math.Sqrt(3))}} {
		rng := rand.New(rand.NewPCG(1, 2))
		counts := [3]int{}
		const n = 20000
		for range n {
			id, err := Sample(logits, tc.temp, rng)
			require.NoError(t, err)
			counts[id]++
		}
		require.Zero(t, counts[2], "a suppressed token was sampled")
		require.InDelta(t, tc.p0, float64(counts[0])/n, 0.015, "T=%v", tc.temp)
	}
	// A seeded generator gives the same draws.
	draw := func() []int {
		rng := rand.New(rand.NewPCG(42, 7))
		var out []int
		for range 50 {
			id, _, err := Select(logitsOf(0.1, 0.2, 0.3, 0.4), 0.7, rng)
			require.NoError(t, err)
			out = append(out, id)
		}
		return out
	}
	require.Equal(t, draw(), draw())
	_, err := Sample(logits, 0, rand.New(rand.NewPCG(1, 1)))
	require.ErrorIs(t, err, ErrBadOption)
	_, err = Sample(logitsOf(inf, inf), 1, rand.New(rand.NewPCG(1, 1)))
	require.ErrorIs(t, err, ErrNoCandidate)
}

// Expected values from Python with the system zlib (1.2.13):
//
//	python3 -c "import zlib; s=TEXT.encode(); print(len(s), len(zlib.compress(s)), len(s)/len(zlib.compress(s)))"
//
// The generated inputs are, in Python:
//
//	big = ' '.join(str(i*i % 1000) for i in range(40000))                     # 153279 -> 1626
//	x = 12345; lcg = ''.join('abcd '[(x := (x*1103515245+12345) % 2**31) % 5] for i in range(120000))  # -> 41069
//
// They cross the 64 KiB window and the 16383-symbol block limit.
func TestCompressionRatio(t *testing.T) {
	tests := []struct {
		text       string
		compressed int
	}{
		{"", 8},
		{"a", 9},
		{"Hello world!", 20},
		{" The quick brown fox jumps over the lazy dog.", 52},
		{repeat(" Thank you.", 20), 22},
		{repeat(" Thank you.", 300), 45},
		{repeat("a", 1000), 17},
		{" Größenwahn ist keine Lösung, sagte Jürgen.", 56},
		{" 我们今天去公园散步吧。我们今天去公园散步吧。", 47},
		{" And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.", 79},
		{bigNumbers(), 1626},
		{lcgText(), 41069},
	}
	for _, tc := range tests {
		require.Equal(t, tc.compressed, zlibCompressedLen([]byte(tc.text)), "len %d", len(tc.text))
		if len(tc.text) > 0 {
			require.InDelta(t, float64(len(tc.text))/float64(tc.compressed), CompressionRatio(tc.text), 1e-12)
		}
	}
	// Again in reverse order: the pooled compressor state left by a large input (slid
	// window, several blocks) must not leak into the next one.
	for i := len(tests) - 1; i >= 0; i-- {
		require.Equal(t, tests[i].compressed, zlibCompressedLen([]byte(tests[i].text)), "len %d (reused)", len(tests[i].text))
	}
	require.Zero(t, CompressionRatio(""))
	// 220 bytes / 22 = 10.0: far above 2.4, the repetition whisper's fallback catches.
	require.InDelta(t, 10.0, CompressionRatio(repeat(" Thank you.", 20)), 1e-12)
}

func repeat(s string, n int) string {
	out := make([]byte, 0, len(s)*n)
	for range n {
		out = append(out, s...)
	}
	return string(out)
}

func bigNumbers() string {
	out := make([]byte, 0, 160000)
	for i := range 40000 {
		if i > 0 {
			out = append(out, ' ')
		}
		out = appendInt(out, i*i%1000)
	}
	return string(out)
}

func appendInt(b []byte, v int) []byte {
	if v >= 10 {
		b = appendInt(b, v/10)
	}
	return append(b, byte('0'+v%10))
}

func lcgText() string {
	x := uint64(12345)
	out := make([]byte, 120000)
	for i := range out {
		x = (x*1103515245 + 12345) % (1 << 31)
		out[i] = "abcd "[x%5]
	}
	return string(out)
}

func TestThresholds(t *testing.T) {
	th := DefaultThresholds()
	// Each expectation follows decode_with_fallback / transcribe's skip test with
	// compression_ratio_threshold 2.4, logprob_threshold -1.0, no_speech_threshold 0.6.
	tests := []struct {
		name     string
		s        Stats
		fallback bool
		skip     bool
	}{
		{"good window", Stats{AvgLogProb: -0.3, CompressionRatio: 1.5, NoSpeechProb: 0.1}, false, false},
		{"repetitive", Stats{AvgLogProb: -0.3, CompressionRatio: 2.5, NoSpeechProb: 0.1}, true, false},
		{"exactly 2.4 is not above", Stats{AvgLogProb: -0.3, CompressionRatio: 2.4, NoSpeechProb: 0.1}, false, false},
		{"improbable", Stats{AvgLogProb: -1.2, CompressionRatio: 1.5, NoSpeechProb: 0.1}, true, false},
		{"exactly -1.0 is not below", Stats{AvgLogProb: -1.0, CompressionRatio: 1.5, NoSpeechProb: 0.1}, false, false},
		// Silence: no_speech_prob > 0.6 and avg_logprob < -1 -> no fallback, and skipped.
		{"silence", Stats{AvgLogProb: -1.5, CompressionRatio: 3.0, NoSpeechProb: 0.9}, false, true},
		// High no-speech probability but confident text: keep it (avg_logprob > -1).
		{"confident despite no-speech", Stats{AvgLogProb: -0.5, CompressionRatio: 1.2, NoSpeechProb: 0.9}, false, false},
		// avg_logprob exactly -1: not > -1, so the skip stands; not < -1, so no fallback,
		// and the silence override does not apply.
		{"no-speech at the logprob boundary", Stats{AvgLogProb: -1.0, CompressionRatio: 2.6, NoSpeechProb: 0.7}, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.fallback, th.NeedsFallback(tc.s))
			require.Equal(t, tc.skip, th.ShouldSkip(tc.s))
		})
	}
	// NaN disables a threshold as None does.
	none := Thresholds{CompressionRatio: math.NaN(), LogProb: math.NaN(), NoSpeech: math.NaN()}
	bad := Stats{AvgLogProb: -5, CompressionRatio: 9, NoSpeechProb: 1}
	require.False(t, none.NeedsFallback(bad))
	require.False(t, none.ShouldSkip(bad))
	onlyCR := Thresholds{CompressionRatio: 2.4, LogProb: math.NaN(), NoSpeech: 0.6}
	require.True(t, onlyCR.NeedsFallback(bad))
	require.True(t, onlyCR.ShouldSkip(bad))
}

func TestTemperaturesAndAverages(t *testing.T) {
	// np.arange(start, 1.0 + 1e-6, step) has ceil((1.0 + 1e-6 - start) / step) values
	// start + i*step; python3 -c "print([0.0 + i*0.2 for i in range(6)])".
	require.Equal(t, []float64{0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0}, Temperatures(0, 0.2))
	require.Equal(t, []float64{0.5, 0.6, 0.7, 0.8, 0.9, 1.0}, Temperatures(0.5, 0.1))
	require.Equal(t, []float64{0.3}, Temperatures(0.3, 0))
	// DecodingTask.run: avg_logprob = sum_logprobs / (len(tokens) + 1).
	require.InDelta(t, -0.5, AvgLogProb(-2, 3), 1e-12)
	// python3 -c "print(repr(' \x1c hi \u3000 \x85'.strip()))" -> 'hi'
	require.Equal(t, "hi", Strip(" \x1c hi \u3000 \u0085"))
}
