package t5

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

type fuzzTokenizer struct {
	name string
	tok  *Tokenizer
}

// fuzzTokenizers returns the hand-made models and, when the goldens are present, the real
// sentencepiece models and one tokenizer.json.
func fuzzTokenizers(f *testing.F) []fuzzTokenizer {
	f.Helper()
	out := []fuzzTokenizer{
		{"m1", mustParse(f, m1())},
		{"bytes", mustParse(f, withBytes(t5Layout(testPiece{"▁", -2, typeNormal}, testPiece{"a", -1, typeNormal})))},
	}
	for _, pre := range []string{
		metaspaceAlways,
		`{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true}`,
		`{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Metaspace","replacement":"▁","prepend_scheme":"never"}]}`,
	} {
		tok, err := Parse([]byte(handJSON(pre)))
		if err != nil {
			f.Fatalf("hand-made tokenizer.json: %v", err)
		}
		out = append(out, fuzzTokenizer{"json " + pre, tok})
	}
	if dir, ok := goldenDirIfPresent(); ok {
		for _, name := range []string{"test_model.model", "bf_model.model", "test_model.tokenizer.json", "bf_model.t5.tokenizer.json"} {
			tok, err := Load(filepath.Join(dir, name))
			if err != nil {
				f.Fatalf("load %s: %v", name, err)
			}
			out = append(out, fuzzTokenizer{name, tok})
		}
	}
	return out
}

// goldenDirIfPresent is goldenDir without skipping: fuzzing still runs on the hand-made
// models when the golden data is absent.
func goldenDirIfPresent() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "testdata", "t5")
	_, err = os.Stat(p)
	return p, err == nil
}

// spmRoundTrips reports whether sentencepiece itself gives Decode(Encode(text)) == text:
// normalization changes nothing but the escaped spaces (with the dummy prefix), the text holds
// no literal "▁", and no character is unknown (or byte fallback covers it).
func spmRoundTrips(tok *Tokenizer, text string, ids []int) bool {
	if tok.hf != nil || text == "" || !utf8.ValidString(text) || strings.Contains(text, spaceSymbol) {
		return false
	}
	if tok.norm.normalize(text) != spaceSymbol+strings.ReplaceAll(text, " ", spaceSymbol) {
		return false
	}
	for _, id := range ids {
		if id == tok.unkID {
			return false
		}
	}
	return true
}

// FuzzEncode checks that Encode and Decode never panic, that ids are in range and end with
// </s>, that EncodePadded has the asked length, and that Decode(Encode(x)) == x wherever
// sentencepiece round-trips. Run by hand with: go test -run '^$' -fuzz FuzzEncode ./runners/diffusion/t5/
func FuzzEncode(f *testing.F) {
	for _, s := range []string{
		"", " ", "a", "ab a b", "a<sep>b", "xyz", "aé", "a\xffb", "\xe2\x96", "▁a",
		"Hello world.", "ＦＵＬＬ－ＷＩＤＴＨ", "吾輩は猫である", "emoji 😀👩\u200d💻", "  a  b  ",
		"\u00a0\u3000\t\n", "<unk></s><pad><extra_id_0>", "e\u0301", strings.Repeat("ab", 100),
	} {
		f.Add(s)
	}
	toks := fuzzTokenizers(f)
	f.Fuzz(func(t *testing.T, text string) {
		for _, ft := range toks {
			ids := ft.tok.Encode(text)
			if len(ids) == 0 || ids[len(ids)-1] != ft.tok.EOSID() {
				t.Fatalf("%s: Encode(%q) = %v does not end with </s> %d", ft.name, text, ids, ft.tok.EOSID())
			}
			for _, id := range ids {
				if id < 0 || id >= ft.tok.VocabSize() {
					t.Fatalf("%s: Encode(%q) has id %d outside [0, %d)", ft.name, text, id, ft.tok.VocabSize())
				}
			}
			dec := ft.tok.Decode(ids)
			if spmRoundTrips(ft.tok, text, ids) && dec != text {
				t.Fatalf("%s: Decode(Encode(%q)) = %q", ft.name, text, dec)
			}
			padded, mask := ft.tok.EncodePadded(text, 8)
			if len(padded) != 8 || len(mask) != 8 {
				t.Fatalf("%s: EncodePadded(%q, 8) has %d ids, %d mask", ft.name, text, len(padded), len(mask))
			}
		}
	})
}
