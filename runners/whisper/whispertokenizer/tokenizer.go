// Package whispertokenizer is Whisper's text tokenizer: byte-level BPE over a tiktoken ranks file
// (multilingual.tiktoken or gpt2.tiktoken) with whisper's pre-tokenizer, plus the special tokens
// of the English-only, multilingual (99 languages) and large-v3 (100 languages) vocabularies,
// the start-of-transcript sequence, and decoding that handles UTF-8 split across tokens exactly
// as openai/whisper's tokenizer.py (on tiktoken) does.
package whispertokenizer

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Errors of this package.
var (
	// ErrUnknownLanguage: the language is not one of whisper's codes or names, or the
	// vocabulary does not have it (yue on a 99-language model).
	ErrUnknownLanguage = errors.New("unknown language")
	// ErrUnknownTask: the task is neither transcribe nor translate.
	ErrUnknownTask = errors.New("unknown task")
	// ErrNotMultilingual: an English-only vocabulary was asked for another language or to
	// translate.
	ErrNotMultilingual = errors.New("english-only model")
	// ErrUnknownToken: a token id outside the vocabulary.
	ErrUnknownToken = errors.New("unknown token id")
	// ErrBadConfig: a Config that names no whisper vocabulary.
	ErrBadConfig = errors.New("bad tokenizer config")
)

// Task is what the decoder is asked to do with the speech.
type Task string

// Whisper's two tasks.
const (
	TaskTranscribe Task = "transcribe"
	TaskTranslate  Task = "translate"
)

const (
	// NumTimestamps is the number of timestamp tokens, <|0.00|> to <|30.00|>.
	NumTimestamps = 1501
	// TimePrecision is the time step of one timestamp token in seconds.
	TimePrecision = 0.02
)

// Config selects a whisper vocabulary.
type Config struct {
	// Multilingual selects multilingual.tiktoken; false selects gpt2.tiktoken (English-only
	// models such as tiny.en).
	Multilingual bool
	// NumLanguages is the number of language tokens: 99, or 100 for large-v3 and turbo.
	// English-only vocabularies have 99 (unused) language tokens too.
	NumLanguages int
}

// ConfigForVocabSize derives the vocabulary from a model's n_vocab as whisper's model.py
// does: multilingual when n_vocab >= 51865, and n_vocab - 51765 - multilingual languages
// (51864: English-only; 51865: 99 languages; 51866: 100 languages).
func ConfigForVocabSize(nVocab int) (Config, error) {
	multi := nVocab >= 51865
	n := nVocab - 51765
	if multi {
		n--
	}
	if n < 1 || n > MaxLanguages {
		return Config{}, fmt.Errorf("%w: n_vocab %d", ErrBadConfig, nVocab)
	}
	return Config{Multilingual: multi, NumLanguages: n}, nil
}

// RanksFile is the name of the tiktoken file the vocabulary is built from.
func (c Config) RanksFile() string {
	if c.Multilingual {
		return "multilingual.tiktoken"
	}
	return "gpt2.tiktoken"
}

// Tokenizer encodes and decodes whisper text. It is immutable and safe for concurrent use.
type Tokenizer struct {
	ranks        *Ranks
	multilingual bool
	numLanguages int
	specials     []string       // text of special token n_ranks+i
	specialIDs   map[string]int // text -> id
	nonSpeech    []int

	eot, sot, translate, transcribe, sotLM, sotPrev, noSpeech, noTimestamps, timestampBegin int
}

// Load reads cfg.RanksFile() from dir and builds the tokenizer.
func Load(dir string, cfg Config) (*Tokenizer, error) {
	r, err := LoadRanksFile(filepath.Join(dir, cfg.RanksFile()))
	if err != nil {
		return nil, err
	}
	return New(r, cfg)
}

// New builds the tokenizer for ranks with whisper's special tokens appended in get_encoding's
// order: <|endoftext|>, <|startoftranscript|>, one token per language, <|translate|>,
// <|transcribe|>, <|startoflm|>, <|startofprev|>, <|nospeech|>, <|notimestamps|> and the
// timestamps <|0.00|> ... <|30.00|>.
func New(ranks *Ranks, cfg Config) (*Tokenizer, error) {
	if ranks == nil {
		return nil, fmt.Errorf("%w: nil ranks", ErrBadConfig)
	}
	if cfg.NumLanguages < 1 || cfg.NumLanguages > MaxLanguages {
		return nil, fmt.Errorf("%w: %d languages", ErrBadConfig, cfg.NumLanguages)
	}
	specials := make([]string, 0, 8+cfg.NumLanguages+NumTimestamps)
	specials = append(specials, "<|endoftext|>", "<|startoftranscript|>")
	for _, l := range languages[:cfg.NumLanguages] {
		specials = append(specials, "<|"+l.code+"|>")
	}
	specials = append(specials, "<|translate|>", "<|transcribe|>", "<|startoflm|>",
		"<|startofprev|>", "<|nospeech|>", "<|notimestamps|>")
	for i := range NumTimestamps {
		// Python: f"<|{i * 0.02:.2f}|>"; both round the same float64 product exactly.
		specials = append(specials, fmt.Sprintf("<|%.2f|>", float64(i)*TimePrecision))
	}
	t := &Tokenizer{
		ranks:        ranks,
		multilingual: cfg.Multilingual,
		numLanguages: cfg.NumLanguages,
		specials:     specials,
		specialIDs:   make(map[string]int, len(specials)),
	}
	for i, s := range specials {
		t.specialIDs[s] = ranks.Len() + i
	}
	t.eot = t.specialIDs["<|endoftext|>"]
	t.sot = t.specialIDs["<|startoftranscript|>"]
	t.translate = t.specialIDs["<|translate|>"]
	t.transcribe = t.specialIDs["<|transcribe|>"]
	t.sotLM = t.specialIDs["<|startoflm|>"]
	t.sotPrev = t.specialIDs["<|startofprev|>"]
	t.noSpeech = t.specialIDs["<|nospeech|>"]
	t.noTimestamps = t.specialIDs["<|notimestamps|>"]
	t.timestampBegin = t.specialIDs["<|0.00|>"]
	t.nonSpeech = t.computeNonSpeech()
	return t, nil
}

// Multilingual reports whether this is a multilingual vocabulary.
func (t *Tokenizer) Multilingual() bool { return t.multilingual }

// NumLanguages is the number of language tokens.
func (t *Tokenizer) NumLanguages() int { return t.numLanguages }

// NVocab is the model's vocabulary size (n_vocab): ranks plus special tokens.
func (t *Tokenizer) NVocab() int { return t.ranks.Len() + len(t.specials) }

// EOT is <|endoftext|>; every id below it is a text token.
func (t *Tokenizer) EOT() int { return t.eot }

// SOT is <|startoftranscript|>.
func (t *Tokenizer) SOT() int { return t.sot }

// Translate is <|translate|>.
func (t *Tokenizer) Translate() int { return t.translate }

// Transcribe is <|transcribe|>.
func (t *Tokenizer) Transcribe() int { return t.transcribe }

// SOTLM is <|startoflm|>.
func (t *Tokenizer) SOTLM() int { return t.sotLM }

// SOTPrev is <|startofprev|>, which introduces the previous-text prompt.
func (t *Tokenizer) SOTPrev() int { return t.sotPrev }

// NoSpeech is <|nospeech|>.
func (t *Tokenizer) NoSpeech() int { return t.noSpeech }

// NoTimestamps is <|notimestamps|>.
func (t *Tokenizer) NoTimestamps() int { return t.noTimestamps }

// TimestampBegin is <|0.00|>; every id from it on is a timestamp.
func (t *Tokenizer) TimestampBegin() int { return t.timestampBegin }

// IsTimestamp reports whether id is a timestamp token.
func (t *Tokenizer) IsTimestamp(id int) bool {
	return id >= t.timestampBegin && id < t.timestampBegin+NumTimestamps
}

// TimestampSeconds is the time a timestamp token stands for.
func (t *Tokenizer) TimestampSeconds(id int) (float64, bool) {
	if !t.IsTimestamp(id) {
		return 0, false
	}
	return float64(id-t.timestampBegin) * TimePrecision, true
}

// SpecialToken returns the id of a special token given its text, e.g. "<|en|>"
// (tiktoken's encode_single_token for specials).
func (t *Tokenizer) SpecialToken(text string) (int, bool) {
	id, ok := t.specialIDs[text]
	return id, ok
}

// NormalizeLanguage maps a whisper language code or name (any case, with tokenizer.py's
// aliases such as "mandarin") to its code.
func NormalizeLanguage(language string) (string, error) {
	l := strings.ToLower(strings.TrimSpace(language))
	for _, e := range languages {
		if e.code == l || e.name == l {
			return e.code, nil
		}
	}
	if c, ok := languageAliases[l]; ok {
		return c, nil
	}
	return "", fmt.Errorf("%w: %q", ErrUnknownLanguage, language)
}

// LanguageToken is the id of a language's token; language is a code or name.
func (t *Tokenizer) LanguageToken(language string) (int, error) {
	code, err := NormalizeLanguage(language)
	if err != nil {
		return 0, err
	}
	id, ok := t.specialIDs["<|"+code+"|>"]
	if !ok {
		return 0, fmt.Errorf("%w: %q is not in this %d-language vocabulary", ErrUnknownLanguage, code, t.numLanguages)
	}
	return id, nil
}

// LanguageTokens lists the language token ids in whisper's LANGUAGES order.
func (t *Tokenizer) LanguageTokens() []int {
	ids := make([]int, t.numLanguages)
	for i := range ids {
		ids[i] = t.sot + 1 + i
	}
	return ids
}

// LanguageCodes lists the language codes, index-aligned with LanguageTokens.
func (t *Tokenizer) LanguageCodes() []string {
	codes := make([]string, t.numLanguages)
	for i := range codes {
		codes[i] = languages[i].code
	}
	return codes
}

// LanguageOf returns the code of a language token.
func (t *Tokenizer) LanguageOf(id int) (string, bool) {
	i := id - t.sot - 1
	if i < 0 || i >= t.numLanguages {
		return "", false
	}
	return languages[i].code, true
}

// SOTSequence is the start of the decoder prompt, tokenizer.py's sot_sequence:
// <|startoftranscript|>, the language token and the task token for multilingual
// vocabularies (language "" means "en" and task "" means transcribe, as get_tokenizer's
// defaults), only <|startoftranscript|> for English-only ones. noTimestamps appends
// <|notimestamps|> (sot_sequence_including_notimestamps). An English-only vocabulary
// rejects other languages than English and the translate task with ErrNotMultilingual.
func (t *Tokenizer) SOTSequence(language string, task Task, noTimestamps bool) ([]int, error) {
	if task != "" && task != TaskTranscribe && task != TaskTranslate {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTask, task)
	}
	seq := []int{t.sot}
	if t.multilingual {
		if language == "" {
			language = "en"
		}
		lang, err := t.LanguageToken(language)
		if err != nil {
			return nil, err
		}
		seq = append(seq, lang)
		if task == TaskTranslate {
			seq = append(seq, t.translate)
		} else {
			seq = append(seq, t.transcribe)
		}
	} else {
		if language != "" {
			code, err := NormalizeLanguage(language)
			if err != nil {
				return nil, err
			}
			if code != "en" {
				return nil, fmt.Errorf("%w: cannot take language %q", ErrNotMultilingual, code)
			}
		}
		if task == TaskTranslate {
			return nil, fmt.Errorf("%w: cannot translate", ErrNotMultilingual)
		}
	}
	if noTimestamps {
		seq = append(seq, t.noTimestamps)
	}
	return seq, nil
}

// Encode tokenizes text as ordinary text: text that looks like a special token, such as
// "<|en|>", is encoded as its characters (tiktoken's encode_ordinary; tiktoken's encode would
// raise instead). The result is what whisper's Tokenizer.encode returns for any other text.
func (t *Tokenizer) Encode(text string) []int {
	return t.ranks.encodeOrdinary(text, make([]int, 0, len(text)/3+1))
}

// AppendEncode is Encode appending to dst.
func (t *Tokenizer) AppendEncode(dst []int, text string) []int {
	return t.ranks.encodeOrdinary(text, dst)
}

// TokenBytes returns the bytes of a text token or the literal text of a special one.
func (t *Tokenizer) TokenBytes(id int) ([]byte, error) {
	if id >= 0 && id < t.ranks.Len() {
		return t.ranks.dec[id], nil
	}
	if i := id - t.ranks.Len(); i >= 0 && i < len(t.specials) {
		return []byte(t.specials[i]), nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownToken, id)
}

type keep uint8

const (
	keepText keep = iota
	keepSpecials
	keepAll
)

func (t *Tokenizer) decode(ids []int, k keep) (string, error) {
	buf := make([]byte, 0, 4*len(ids))
	for _, id := range ids {
		switch {
		case id >= 0 && id < t.ranks.Len():
			buf = append(buf, t.ranks.dec[id]...)
			continue
		case id < 0 || id >= t.NVocab():
			return "", fmt.Errorf("%w: %d", ErrUnknownToken, id)
		case k == keepText, k == keepSpecials && id >= t.timestampBegin:
			continue
		}
		buf = append(buf, t.specials[id-t.ranks.Len()]...)
	}
	return decodeUTF8Replace(buf), nil
}

// Decode is whisper's Tokenizer.decode: timestamp tokens are dropped, other special tokens
// appear as their text ("<|en|>"), and the bytes are decoded as UTF-8 with one U+FFFD per
// invalid sequence, where Python's bytes.decode(errors="replace") puts them.
func (t *Tokenizer) Decode(ids []int) (string, error) { return t.decode(ids, keepSpecials) }

// DecodeWithTimestamps is whisper's decode_with_timestamps: like Decode, with timestamps
// kept as text such as "<|1.08|>".
func (t *Tokenizer) DecodeWithTimestamps(ids []int) (string, error) {
	return t.decode(ids, keepAll)
}

// DecodeText decodes the text tokens only (ids below EOT); every special token and
// timestamp is dropped. This is the transcript text of a segment.
func (t *Tokenizer) DecodeText(ids []int) (string, error) { return t.decode(ids, keepText) }

// NonSpeechTokens is tokenizer.py's non_speech_tokens: the tokens of symbols that mark
// non-speech annotations (speaker tags, music notes, brackets...), suppressed by the default
// suppress_tokens "-1". Sorted ascending; the caller must not modify the slice.
func (t *Tokenizer) NonSpeechTokens() []int { return t.nonSpeech }

func (t *Tokenizer) computeNonSpeech() []int {
	symbols := strings.Split(`"#()*+/:;<=>@[\]^_`+"`"+`{|}~「」『』`, "")
	symbols = append(symbols, strings.Fields(`<< >> <<< >>> -- --- -( -[ (' (" (( )) ((( ))) [[ ]] {{ }} ♪♪ ♪♪♪`)...)
	// Symbols of U+2640..U+267F share their first two UTF-8 bytes; when one is split over
	// several tokens its first token is suppressed.
	miscellaneous := strings.Split("♩♪♫♬♭♮♯", "")
	set := map[int]struct{}{
		t.Encode(" -")[0]: {},
		t.Encode(" '")[0]: {},
	}
	add := func(s string, misc bool) {
		for _, text := range []string{s, " " + s} {
			ids := t.Encode(text)
			if len(ids) == 1 || misc {
				set[ids[0]] = struct{}{}
			}
		}
	}
	for _, s := range symbols {
		add(s, false)
	}
	for _, s := range miscellaneous {
		add(s, true)
	}
	out := make([]int, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
