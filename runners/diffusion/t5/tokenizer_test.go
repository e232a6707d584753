package t5

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Piece ids of m1 (after T5's <pad> 0, </s> 1, <unk> 2).
const (
	m1Space = 3 // "▁"
	m1A     = 4 // "a"
	m1B     = 5 // "b"
	m1AB    = 6 // "ab"
	m1SA    = 7 // "▁a"
	m1SAB   = 8 // "▁ab"
	m1C     = 9 // "c"
	m1Sep   = 10
	m1CC    = 11
)

// m1 is a small model whose segmentations are worked out by hand in the comments below.
func m1() testModel {
	return t5Layout(
		testPiece{"▁", -2, typeNormal},
		testPiece{"a", -1, typeNormal},
		testPiece{"b", -1.5, typeNormal},
		testPiece{"ab", -2, typeNormal},
		testPiece{"▁a", -1, typeNormal},
		testPiece{"▁ab", -4, typeNormal},
		testPiece{"c", -1, typeNormal},
		testPiece{"<sep>", 0, typeUserDefined},
		testPiece{"cc", 0, typeUnused},
	)
}

func mustParse(t testing.TB, m testModel) *Tokenizer {
	t.Helper()
	tok, err := Parse(m.bytes())
	require.NoError(t, err)
	return tok
}

func TestEncodeHandWorked(t *testing.T) {
	const eos = 1
	tests := []struct {
		name  string
		model testModel
		text  string
		want  []int
	}{
		{"empty is eos only", m1(), "", []int{eos}},
		{"only spaces", m1(), "  \u0020 ", []int{eos}},
		// "▁ab": ▁ab -4, ▁+ab -4, ▁a+b -2.5 (best), ▁+a+b -4.5.
		{"best total score, not longest piece", m1(), "ab", []int{m1SA, m1B, eos}},
		// "▁a▁b": no "▁b" piece, so ▁ + b.
		{"two words", m1(), "a b", []int{m1SA, m1Space, m1B, eos}},
		{"extra whitespace removed", m1(), "  a   b  ", []int{m1SA, m1Space, m1B, eos}},
		{"unused piece never chosen", m1(), "cc", []int{m1Space, m1C, m1C, eos}},
		{"user-defined symbol kept whole", m1(), "a<sep>b", []int{m1SA, m1Sep, m1B, eos}},
		{"run of unknown characters is one <unk>", m1(), "xyz", []int{m1Space, 2, eos}},
		// "▁ax▁a": ▁a, <unk>(x), then ▁a again.
		{"unknown between known pieces", m1(), "ax a", []int{m1SA, 2, m1SA, eos}},

		// "▁xab": ▁ + <unk>(x) + ab = -2 + (-20-10) - 1 = -33 against ▁ + xa + b = -22 + b.
		// With b = -12 (-34) the unknown path wins, with b = -10 (-32) it loses: together they
		// pin the penalty to (9, 11).
		{"unknown priced at min score - 10 (wins)", t5Layout(
			testPiece{"▁", -2, typeNormal}, testPiece{"ab", -1, typeNormal},
			testPiece{"xa", -20, typeNormal}, testPiece{"b", -12, typeNormal},
		), "xab", []int{3, 2, 4, eos}},
		{"unknown priced at min score - 10 (loses)", t5Layout(
			testPiece{"▁", -2, typeNormal}, testPiece{"ab", -1, typeNormal},
			testPiece{"xa", -20, typeNormal}, testPiece{"b", -10, typeNormal},
		), "xab", []int{3, 5, 6, eos}},
		// Byte fallback: é (C3 A9) has no piece; byte pieces start at id 5.
		{"byte fallback", withBytes(t5Layout(testPiece{"▁", -2, typeNormal}, testPiece{"a", -1, typeNormal})),
			"aé", []int{3, 4, 5 + 0xC3, 5 + 0xA9, eos}},
		{"byte fallback does not merge", withBytes(t5Layout(testPiece{"▁", -2, typeNormal}, testPiece{"a", -1, typeNormal})),
			"éé", []int{3, 5 + 0xC3, 5 + 0xA9, 5 + 0xC3, 5 + 0xA9, eos}},
		{"whitespace kept, no dummy prefix", func() testModel {
			m := t5Layout(testPiece{"▁", -2, typeNormal}, testPiece{"a", -1, typeNormal})
			m.keepWhitespace, m.noDummyPrefix = true, true
			return m
		}(), " a  a ", []int{3, 4, 3, 3, 4, 3, eos}},
		// treat_whitespace_as_suffix: "a▁a▁", a▁ -1 twice beats a + ▁.
		{"whitespace as suffix", func() testModel {
			m := t5Layout(testPiece{"▁", -2, typeNormal}, testPiece{"a", -1, typeNormal}, testPiece{"a▁", -1, typeNormal})
			m.wsSuffix = true
			return m
		}(), "a a", []int{5, 5, eos}},
		{"malformed UTF-8 reads as U+FFFD", m1(), "a\xffb", []int{m1SA, 2, m1B, eos}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := mustParse(t, tc.model)
			require.Equal(t, tc.want, tok.Encode(tc.text))
		})
	}
}

func TestDecodeHandWorked(t *testing.T) {
	keep := t5Layout(testPiece{"▁", -2, typeNormal}, testPiece{"a", -1, typeNormal})
	keep.keepWhitespace, keep.noDummyPrefix = true, true
	bytesModel := withBytes(t5Layout(testPiece{"▁", -2, typeNormal}, testPiece{"a", -1, typeNormal}))
	tests := []struct {
		name  string
		model testModel
		ids   []int
		want  string
	}{
		{"pieces joined, first ▁ dropped", m1(), []int{m1SA, m1B, 1}, "ab"},
		{"control and out-of-range ids invisible", m1(), []int{1, 0, m1SA, 99999, -1, m1B}, "ab"},
		{"unknown surface", m1(), []int{2}, " \u2047 "},
		{"leading ▁ pieces dropped while nothing written", m1(), []int{m1Space, m1Space, m1SA}, "a"},
		{"inner ▁ becomes space", m1(), []int{m1SA, m1Space, m1B}, "a b"},
		{"no stripping without dummy prefix", keep, []int{3, 4}, " a"},
		{"bytes as UTF-8", bytesModel, []int{4, 5 + 0xC3, 5 + 0xA9}, "aé"},
		{"invalid bytes as U+FFFD each", bytesModel, []int{5 + 0xC3, 5 + 0x41, 5 + 0xFF}, "\uFFFDA\uFFFD"},
		{"empty", m1(), nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, mustParse(t, tc.model).Decode(tc.ids))
		})
	}
}

func TestEncodePadded(t *testing.T) {
	tok := mustParse(t, m1())
	tests := []struct {
		name     string
		text     string
		maxLen   int
		wantIDs  []int
		wantMask []int
	}{
		{"padded with id 0", "ab", 5, []int{m1SA, m1B, 1, 0, 0}, []int{1, 1, 1, 0, 0}},
		{"exact fit", "ab", 3, []int{m1SA, m1B, 1}, []int{1, 1, 1}},
		{"cut keeps </s>", "a b a b", 3, []int{m1SA, m1Space, 1}, []int{1, 1, 1}},
		{"length one is </s>", "a b", 1, []int{1}, []int{1}},
		{"empty text", "", 2, []int{1, 0}, []int{1, 0}},
		{"no length: unpadded", "a b", 0, []int{m1SA, m1Space, m1B, 1}, []int{1, 1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ids, mask := tok.EncodePadded(tc.text, tc.maxLen)
			require.Equal(t, tc.wantIDs, ids)
			require.Equal(t, tc.wantMask, mask)
		})
	}
}

func TestModelFields(t *testing.T) {
	tok := mustParse(t, m1())
	require.Equal(t, 12, tok.VocabSize())
	require.Equal(t, 1, tok.EOSID())
	require.Equal(t, 0, tok.PadID())
	require.Equal(t, 2, tok.UnkID())

	// sentencepiece's own defaults: unk 0, bos 1, eos 2, no pad (we pad with 0).
	def := testModel{pieces: []testPiece{{"<unk>", 0, typeUnknown}, {"<s>", 0, typeControl}, {"</s>", 0, typeControl}, {"a", -1, typeNormal}}}
	tok = mustParse(t, def)
	require.Equal(t, 0, tok.UnkID())
	require.Equal(t, 2, tok.EOSID())
	require.Equal(t, 0, tok.PadID())
	require.Equal(t, []int{0, 3, 2}, tok.Encode("a"), "▁ is unknown here")
}

func TestParseErrors(t *testing.T) {
	noUnk := testModel{pieces: []testPiece{{"a", -1, typeNormal}}}
	dup := t5Layout(testPiece{"a", -1, typeNormal}, testPiece{"a", -2, typeNormal})
	bpe := m1()
	bpe.modelType = 2
	missingBytes := withBytes(m1())
	missingBytes.pieces = missingBytes.pieces[:len(missingBytes.pieces)-1]
	strayByte := t5Layout(testPiece{"<0x41>", 0, typeByte})
	badCharsmap := m1()
	badCharsmap.charsmap = []byte{0xff, 0, 0, 0, 1, 2}
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"garbage", []byte{0xff, 0xff, 0xff}, ErrInvalidModel},
		{"truncated", m1().bytes()[:40], ErrInvalidModel},
		{"no pieces", nil, ErrInvalidModel},
		{"no unknown piece", noUnk.bytes(), ErrInvalidModel},
		{"duplicate piece", dup.bytes(), ErrInvalidModel},
		{"BPE model", bpe.bytes(), ErrUnsupported},
		{"byte_fallback without all bytes", missingBytes.bytes(), ErrInvalidModel},
		{"byte piece without byte_fallback", strayByte.bytes(), ErrInvalidModel},
		{"broken charsmap", badCharsmap.bytes(), ErrInvalidModel},
		{"bad json", []byte(`{"model": [}`), ErrInvalidModel},
		{"json BPE", []byte(`{"model":{"type":"BPE","vocab":{},"merges":[]}}`), ErrUnsupported},
		{"json empty vocab", []byte(`{"model":{"type":"Unigram","unk_id":0,"vocab":[]}}`), ErrInvalidModel},
		{"json no unk", []byte(`{"model":{"type":"Unigram","vocab":[["a",-1.0]]}}`), ErrUnsupported},
		{"json bad vocab entry", []byte(`{"model":{"type":"Unigram","unk_id":0,"vocab":[["a"]]}}`), ErrInvalidModel},
		{"json unknown normalizer", []byte(`{"normalizer":{"type":"BertNormalizer"},"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0.0]]}}`), ErrUnsupported},
		{"json unknown pre_tokenizer", []byte(`{"pre_tokenizer":{"type":"ByteLevel"},"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0.0]]}}`), ErrUnsupported},
		{"json bad base64 charsmap", []byte(`{"normalizer":{"type":"Precompiled","precompiled_charsmap":"%%%"},"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0.0]]}}`), ErrInvalidModel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.data)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(filepath.Join(dir, "absent.model"))
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = Load(dir)
	require.ErrorIs(t, err, ErrNotFound)

	path := filepath.Join(dir, "spiece.model")
	require.NoError(t, os.WriteFile(path, m1().bytes(), 0o600))
	for _, p := range []string{path, dir} {
		tok, err := Load(p)
		require.NoError(t, err)
		require.Equal(t, []int{m1SA, m1B, 1}, tok.Encode("ab"))
	}
}

// TestTokenizerJSONHandWorked covers the tokenizer.json pipeline on a hand-made file: added
// tokens, Strip/Replace normalizers, Metaspace words, fused unknowns, the template's </s>.
func TestTokenizerJSONHandWorked(t *testing.T) {
	tok, err := Parse([]byte(handJSON(metaspaceAlways)))
	require.NoError(t, err)
	require.Equal(t, 10, tok.VocabSize(), "added token 9 extends the vocabulary")
	tests := []struct {
		text string
		want []int
	}{
		{"ab", []int{7, 5, 1}},
		{"a b", []int{7, 3, 5, 1}},
		{"xyz", []int{3, 2, 1}},                  // one fused <unk> in the word "▁xyz"
		{"a<extra_id_0>b", []int{7, 9, 3, 5, 1}}, // the segment after the token gets its own ▁
		{"  a  ", []int{7, 1}},                   // strip right, "  " -> ▁, no second ▁ prepended
		{"", []int{1}},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, tok.Encode(tc.text), "Encode(%q)", tc.text)
	}
	require.Equal(t, "a b", tok.Decode([]int{7, 3, 5, 1, 0, 2}))
	require.Equal(t, "ab", tok.Decode([]int{7, 9, 5}), "special added tokens are skipped")
}

func TestTokenizerJSONPrependSchemes(t *testing.T) {
	tests := []struct {
		name, pre, text string
		want            []int
	}{
		// "a▁b" splits as "a", "▁b"; there is no "▁b" piece.
		{"never", `{"type":"Metaspace","replacement":"▁","prepend_scheme":"never","split":true}`, "a b", []int{4, 3, 5, 1}},
		{"first at the start", `{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true}`, "a b", []int{7, 3, 5, 1}},
		{"first after an added token", `{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true}`,
			"x<extra_id_0>a b", []int{3, 2, 9, 4, 3, 5, 1}},
		{"no split", `{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":false}`, "a b", []int{7, 3, 5, 1}},
		{"legacy add_prefix_space false", `{"type":"Metaspace","replacement":"▁","add_prefix_space":false}`, "ab", []int{6, 1}},
		{"whitespace split", `{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Metaspace","replacement":"▁","add_prefix_space":true}]}`,
			"a\tb", []int{7, 3, 5, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := Parse([]byte(handJSON(tc.pre)))
			require.NoError(t, err)
			require.Equal(t, tc.want, tok.Encode(tc.text))
		})
	}
}

const metaspaceAlways = `{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}`

// handJSON is a small tokenizer.json with the given pre_tokenizer.
func handJSON(preTokenizer string) string {
	return `{
 "added_tokens": [
  {"id":0,"content":"<pad>","special":true},{"id":1,"content":"</s>","special":true},
  {"id":2,"content":"<unk>","special":true},{"id":9,"content":"<extra_id_0>","special":true}],
 "normalizer": {"type":"Sequence","normalizers":[
  {"type":"Strip","strip_left":false,"strip_right":true},
  {"type":"Replace","pattern":{"Regex":" {2,}"},"content":"▁"}]},
 "pre_tokenizer": ` + preTokenizer + `,
 "post_processor": {"type":"TemplateProcessing","single":[{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"</s>","type_id":0}}],
  "special_tokens":{"</s>":{"id":"</s>","ids":[1],"tokens":["</s>"]}}},
 "decoder": {"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true},
 "model": {"type":"Unigram","unk_id":2,"vocab":[["<pad>",0.0],["</s>",0.0],["<unk>",0.0],
  ["▁",-2.0],["a",-1.0],["b",-1.5],["ab",-2.0],["▁a",-1.0],["▁ab",-4.0]]}
}`
}

// TestConcurrentEncode shares one Tokenizer between goroutines (run with -race).
func TestConcurrentEncode(t *testing.T) {
	tok := mustParse(t, m1())
	want := tok.Encode(strings.Repeat("ab a b xyz ", 20))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if got := tok.Encode(strings.Repeat("ab a b xyz ", 20)); !equalInts(got, want) {
					t.Errorf("concurrent Encode differs")
					return
				}
			}
		})
	}
	wg.Wait()
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
