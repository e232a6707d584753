package segment

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
)

func testTokenizer(t *testing.T) *whispertokenizer.Tokenizer {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "go.mod not found")
		dir = parent
	}
	d := filepath.Join(dir, "..", "shared", "testdata", "whisper")
	if _, err := os.Stat(filepath.Join(d, "multilingual.tiktoken")); err != nil {
		t.Skipf("whisper vocabulary not found in %s (see shared/testdata/README.md): %v", d, err)
	}
	tok, err := whispertokenizer.Load(d, whispertokenizer.Config{Multilingual: true, NumLanguages: 99})
	require.NoError(t, err)
	return tok
}

// Text tokens of the multilingual vocabulary (from the golden tokens.json): 440 " The",
// 1702 " quick", 6292 " brown", 220 " ". Timestamps are tb + n for <|n*0.02|>.
func TestSplit(t *testing.T) {
	tok := testTokenizer(t)
	tb := tok.TimestampBegin()
	type seg struct {
		start, end float64
		text       string
		tokens     []int
	}
	tests := []struct {
		name     string
		w        Window
		want     []seg
		wantSeek int
	}{
		{
			// consecutive timestamps at index 3,4 -> slice at 4; tokens[-2:] = [text, ts] is a
			// single timestamp ending -> slices [4, 7] and seek += segment_size.
			name: "pairs then a single timestamp ending",
			w:    Window{Seek: 0, Frames: 3000, Tokens: []int{tb, 440, 1702, tb + 50, tb + 50, 6292, tb + 120}},
			want: []seg{
				{0, 1.0, " The quick", []int{tb, 440, 1702, tb + 50}},
				{1.0, 2.4, " brown", []int{tb + 50, 6292, tb + 120}},
			},
			wantSeek: 3000,
		},
		{
			// The same tokens in a window starting at frame 1500: time_offset = 15.0 s.
			name: "time offset of a later window",
			w:    Window{Seek: 1500, Frames: 3000, Tokens: []int{tb, 440, 1702, tb + 50, tb + 50, 6292, tb + 120}},
			want: []seg{
				{15.0, 16.0, " The quick", []int{tb, 440, 1702, tb + 50}},
				{16.0, 17.4, " brown", []int{tb + 50, 6292, tb + 120}},
			},
			wantSeek: 4500,
		},
		{
			// Unfinished last segment (ends in text): only tokens[0:3] form a segment and the
			// next window starts at the last timestamp: seek += 50 * input_stride = 100.
			name: "unfinished segment is dropped, seek to last timestamp",
			w:    Window{Seek: 200, Frames: 3000, Tokens: []int{tb, 440, tb + 50, tb + 60, 1702}},
			want: []seg{
				{2.0, 3.0, " The", []int{tb, 440, tb + 50}},
			},
			wantSeek: 300,
		},
		{
			// Ends in a pair: tokens[-2:] are both timestamps, not a single ending, so seek
			// goes to tokens[last_slice - 1] = <|1.00|> -> +100 frames.
			name: "ending in a pair seeks to its first timestamp",
			w:    Window{Seek: 0, Frames: 3000, Tokens: []int{tb, 440, tb + 50, tb + 50}},
			want: []seg{
				{0, 1.0, " The", []int{tb, 440, tb + 50}},
			},
			wantSeek: 100,
		},
		{
			// No consecutive timestamps but a last timestamp <|2.00|> != <|0.00|>: one segment
			// from time_offset to time_offset + 2.0 s, seek += segment_size.
			name: "no pair, last timestamp gives the duration",
			w:    Window{Seek: 3000, Frames: 3000, Tokens: []int{tb + 10, 440, 1702, tb + 100}},
			want: []seg{
				{30.0, 32.0, " The quick", []int{tb + 10, 440, 1702, tb + 100}},
			},
			wantSeek: 6000,
		},
		{
			// No timestamps at all (without_timestamps): the window's audio duration.
			name: "no timestamps",
			w:    Window{Seek: 6000, Frames: 1234, Tokens: []int{440, 1702}},
			want: []seg{
				{60.0, 72.34, " The quick", []int{440, 1702}},
			},
			wantSeek: 7234,
		},
		{
			// The only timestamp is <|0.00|>: the duration stays the window's.
			name: "only <|0.00|>",
			w:    Window{Seek: 0, Frames: 2500, Tokens: []int{tb, 440}},
			want: []seg{
				{0, 25.0, " The", []int{tb, 440}},
			},
			wantSeek: 2500,
		},
		{
			// [<|1.00|>, <|1.00|>, " The", <|1.20|>]: slices [1, 4]; the first segment is
			// instantaneous (1.0 == 1.0) -> text and tokens cleared, but it is kept.
			name: "instantaneous segment is cleared",
			w:    Window{Seek: 0, Frames: 3000, Tokens: []int{tb + 50, tb + 50, 440, tb + 60}},
			want: []seg{
				{1.0, 1.0, "", nil},
				{1.0, 1.2, " The", []int{tb + 50, 440, tb + 60}},
			},
			wantSeek: 3000,
		},
		{
			// A segment whose text is only " " is cleared (text.strip() == "").
			name: "blank segment is cleared",
			w:    Window{Seek: 0, Frames: 3000, Tokens: []int{tb, 220, tb + 50, tb + 50, 440, tb + 100}},
			want: []seg{
				{0, 1.0, "", nil},
				{1.0, 2.0, " The", []int{tb + 50, 440, tb + 100}},
			},
			wantSeek: 3000,
		},
		{
			// Nothing decoded: one empty segment over the window, seek += segment_size.
			name:     "empty",
			w:        Window{Seek: 0, Frames: 3000},
			want:     []seg{{0, 30.0, "", nil}},
			wantSeek: 3000,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.w.Temperature, tc.w.AvgLogProb, tc.w.CompressionRatio, tc.w.NoSpeechProb = 0.2, -0.4, 1.3, 0.05
			got, seek, err := Split(tok, tc.w)
			require.NoError(t, err)
			require.Equal(t, tc.wantSeek, seek)
			require.Len(t, got, len(tc.want))
			for i, w := range tc.want {
				g := got[i]
				require.InDelta(t, w.start, g.Start, 1e-9, "segment %d start", i)
				require.InDelta(t, w.end, g.End, 1e-9, "segment %d end", i)
				require.Equal(t, w.text, g.Text, "segment %d text", i)
				require.Equal(t, w.tokens, g.Tokens, "segment %d tokens", i)
				require.Equal(t, tc.w.Seek, g.Seek)
				require.Equal(t, 0.2, g.Temperature)
				require.Equal(t, -0.4, g.AvgLogProb)
				require.Equal(t, 1.3, g.CompressionRatio)
				require.Equal(t, 0.05, g.NoSpeechProb)
			}
		})
	}
}

func TestSplitErrors(t *testing.T) {
	tok := testTokenizer(t)
	for _, w := range []Window{{Seek: -1, Frames: 10}, {Frames: 0}, {Frames: NFrames + 1}} {
		_, _, err := Split(tok, w)
		require.ErrorIs(t, err, ErrBadWindow)
	}
	_, _, err := Split(tok, Window{Frames: 100, Tokens: []int{-5}})
	require.ErrorIs(t, err, whispertokenizer.ErrUnknownToken)
}
