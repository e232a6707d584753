// Package decoding holds openai/whisper's per-window decoding rules as pure functions over one
// decoder step's logits ([]float32 of length n_vocab): the logit filters (suppress_blank,
// suppress_tokens, timestamp rules), greedy and temperature-sampled token selection,
// no-speech probability, language detection, the compression ratio and average log
// probability of a window, the initial decoder tokens (prompt, sot sequence, prefix), and the
// temperature-fallback and no-speech-skip decisions of transcribe.py. It owns no model and no
// device; the runner's decoding loop calls it.
package decoding

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
)

// Errors of this package.
var (
	// ErrLogitsSize: the logits are not one value per vocabulary entry.
	ErrLogitsSize = errors.New("logits length does not match the vocabulary")
	// ErrNoCandidate: every token is suppressed (all logits are -Inf or NaN).
	ErrNoCandidate = errors.New("no selectable token")
	// ErrBadOption: an option value whisper would reject.
	ErrBadOption = errors.New("bad decoding option")
)

var negInf = float32(math.Inf(-1))

// Options are the DecodingOptions that shape the logit filters.
type Options struct {
	// SuppressTokens is whisper's suppress_tokens: comma-separated ids, where -1 stands for
	// the tokenizer's non-speech tokens; "" suppresses no text token. Whisper's default is "-1".
	SuppressTokens string
	// SuppressBlank forbids a blank or EOT as the first sampled token (default true).
	SuppressBlank bool
	// WithoutTimestamps decodes text only (<|notimestamps|> in the prompt, no timestamp rules).
	WithoutTimestamps bool
	// MaxInitialTimestamp is the latest first timestamp in seconds (default 1.0); 0 means no
	// limit, as whisper treats a falsy value.
	MaxInitialTimestamp float64
}

// DefaultOptions are whisper's DecodingOptions defaults.
func DefaultOptions() Options {
	return Options{SuppressTokens: "-1", SuppressBlank: true, MaxInitialTimestamp: 1.0}
}

// Filters applies whisper's logit filters in DecodingTask's order: SuppressBlank,
// SuppressTokens, ApplyTimestampRules. It is immutable and safe for concurrent use.
type Filters struct {
	nVocab     int
	blank      []int // nil when suppress_blank is off
	suppress   []int
	timestamps *TimestampRules // nil without timestamps
}

// NewFilters builds the filters for a tokenizer and options.
func NewFilters(tok *whispertokenizer.Tokenizer, opts Options) (*Filters, error) {
	ids, err := ParseSuppressTokens(opts.SuppressTokens)
	if err != nil {
		return nil, err
	}
	if opts.MaxInitialTimestamp < 0 || math.IsNaN(opts.MaxInitialTimestamp) {
		return nil, fmt.Errorf("%w: max_initial_timestamp %v", ErrBadOption, opts.MaxInitialTimestamp)
	}
	f := &Filters{nVocab: tok.NVocab(), suppress: SuppressList(tok, ids)}
	for _, id := range f.suppress {
		if id >= f.nVocab {
			return nil, fmt.Errorf("%w: suppress token %d outside the vocabulary", ErrBadOption, id)
		}
	}
	if opts.SuppressBlank {
		f.blank = BlankTokens(tok)
	}
	if !opts.WithoutTimestamps {
		r := NewTimestampRules(tok, opts.MaxInitialTimestamp)
		f.timestamps = &r
	}
	return f, nil
}

// Apply filters one step's logits in place. sampled holds the tokens sampled so far in this
// window: the tokens after the prompt, sot sequence and prefix (tokens[sample_begin:]).
func (f *Filters) Apply(logits []float32, sampled []int) error {
	if len(logits) != f.nVocab {
		return fmt.Errorf("%w: %d logits, n_vocab %d", ErrLogitsSize, len(logits), f.nVocab)
	}
	if f.blank != nil {
		SuppressBlank(logits, sampled, f.blank)
	}
	SuppressTokens(logits, f.suppress)
	if f.timestamps != nil {
		return f.timestamps.Apply(logits, sampled)
	}
	return nil
}

// Suppressed is the sorted list of token ids the filters always suppress.
func (f *Filters) Suppressed() []int { return slices.Clone(f.suppress) }

// BlankTokens are the ids SuppressBlank forbids: encode(" ") and EOT.
func BlankTokens(tok *whispertokenizer.Tokenizer) []int {
	return append(tok.Encode(" "), tok.EOT())
}

// SuppressBlank is whisper's SuppressBlank filter: at the first sampled step (no token
// sampled yet) the blank tokens (BlankTokens) get -Inf.
func SuppressBlank(logits []float32, sampled []int, blank []int) {
	if len(sampled) == 0 {
		SuppressTokens(logits, blank)
	}
}

// SuppressTokens sets the logits of ids to -Inf; ids outside logits are ignored.
func SuppressTokens(logits []float32, ids []int) {
	for _, id := range ids {
		if id >= 0 && id < len(logits) {
			logits[id] = negInf
		}
	}
}

// ParseSuppressTokens parses whisper's comma-separated suppress_tokens ("-1", "1,2,-1", "").
func ParseSuppressTokens(spec string) ([]int, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	parts := strings.Split(spec, ",")
	ids := make([]int, 0, len(parts))
	for _, p := range parts {
		id, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || id < -1 {
			return nil, fmt.Errorf("%w: suppress_tokens %q", ErrBadOption, spec)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// SuppressList is DecodingTask._get_suppress_tokens: when ids contain -1 it is replaced by the
// tokenizer's non-speech tokens; then <|transcribe|>, <|translate|>, <|startoftranscript|>,
// <|startofprev|>, <|startoflm|> and <|nospeech|> are added (no-speech probability is read
// separately). The result is sorted and without duplicates.
func SuppressList(tok *whispertokenizer.Tokenizer, ids []int) []int {
	out := make([]int, 0, len(ids)+len(tok.NonSpeechTokens())+6)
	if slices.Contains(ids, -1) {
		for _, id := range ids {
			if id >= 0 {
				out = append(out, id)
			}
		}
		out = append(out, tok.NonSpeechTokens()...)
	} else {
		out = append(out, ids...)
	}
	out = append(out, tok.Transcribe(), tok.Translate(), tok.SOT(), tok.SOTPrev(), tok.SOTLM(), tok.NoSpeech())
	slices.Sort(out)
	return slices.Compact(out)
}

// TimestampRules is whisper's ApplyTimestampRules filter.
type TimestampRules struct {
	EOT, NoTimestamps, TimestampBegin int
	// MaxInitialTimestampIndex bounds the first timestamp to <|0.00|> + index; -1: no bound.
	MaxInitialTimestampIndex int
}

// NewTimestampRules takes the ids from tok and the bound as whisper computes it:
// round(max_initial_timestamp / 0.02), none when maxInitialTimestamp is 0.
func NewTimestampRules(tok *whispertokenizer.Tokenizer, maxInitialTimestamp float64) TimestampRules {
	idx := -1
	if maxInitialTimestamp > 0 {
		idx = int(math.RoundToEven(maxInitialTimestamp / whispertokenizer.TimePrecision))
	}
	return TimestampRules{
		EOT: tok.EOT(), NoTimestamps: tok.NoTimestamps(), TimestampBegin: tok.TimestampBegin(),
		MaxInitialTimestampIndex: idx,
	}
}

// Apply filters logits in place given the tokens sampled so far in the window:
//   - <|notimestamps|> is never sampled;
//   - timestamps come in pairs: after a lone timestamp the next token is a timestamp or EOT,
//     after a pair (or a timestamp as the first sampled token) it is text;
//   - timestamps never decrease, and a segment has nonzero length (after text, the next
//     timestamp is strictly later than the last one);
//   - the first sampled token is a timestamp no later than the max initial timestamp;
//   - when the total probability of the timestamps exceeds that of the likeliest text
//     token, only timestamps remain.
//
// The logits must cover the vocabulary (more than TimestampBegin values) or ErrLogitsSize is
// returned. The comparison is made in float64 where whisper uses float32.
func (r TimestampRules) Apply(logits []float32, sampled []int) error {
	tb := r.TimestampBegin
	if tb <= r.EOT || len(logits) <= tb {
		return fmt.Errorf("%w: %d logits, timestamps begin at %d", ErrLogitsSize, len(logits), tb)
	}
	if r.NoTimestamps >= 0 && r.NoTimestamps < len(logits) {
		logits[r.NoTimestamps] = negInf
	}
	n := len(sampled)
	lastWasTS := n >= 1 && sampled[n-1] >= tb
	penultimateWasTS := n < 2 || sampled[n-2] >= tb
	if lastWasTS {
		if penultimateWasTS {
			fill(logits[tb:], negInf)
		} else {
			fill(logits[:r.EOT], negInf)
		}
	}
	lastTS := -1
	for i := n - 1; i >= 0; i-- {
		if sampled[i] >= tb {
			lastTS = sampled[i]
			break
		}
	}
	if lastTS >= 0 {
		end := lastTS + 1
		if lastWasTS && !penultimateWasTS {
			end = lastTS
		}
		fill(logits[tb:min(end, len(logits))], negInf)
	}
	if n == 0 {
		fill(logits[:tb], negInf)
		if r.MaxInitialTimestampIndex >= 0 {
			if last := tb + r.MaxInitialTimestampIndex; last+1 < len(logits) {
				fill(logits[last+1:], negInf)
			}
		}
	}
	// Sum of probability over timestamps vs the likeliest text token. Whisper compares
	// log-softmax values; the common normaliser cancels, so the raw logits are compared.
	tsMass := logSumExp(logits[tb:])
	maxText := math.Inf(-1)
	for _, v := range logits[:tb] {
		maxText = max(maxText, float64(v))
	}
	if tsMass > maxText {
		fill(logits[:tb], negInf)
	}
	return nil
}

func fill(s []float32, v float32) {
	for i := range s {
		s[i] = v
	}
}

// logSumExp is log(sum(exp(x))) computed in float64; -Inf for an empty or all -Inf slice.
func logSumExp(x []float32) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, float64(v))
	}
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return m
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}

// LogProb is log_softmax(logits)[id], in float64.
func LogProb(logits []float32, id int) float64 {
	return float64(logits[id]) - logSumExp(logits)
}

// Greedy is the temperature-0 choice: the index of the largest logit, the first one on ties
// (torch.argmax).
func Greedy(logits []float32) (int, error) {
	best, bestV := -1, float32(math.Inf(-1))
	for i, v := range logits {
		if v > bestV {
			best, bestV = i, v
		}
	}
	if best < 0 {
		return 0, ErrNoCandidate
	}
	return best, nil
}

// Sample draws a token from softmax(logits / temperature) (torch's Categorical) with rng.
// Suppressed (-Inf) tokens are never drawn. The draw is reproducible for a seeded rng, but it
// is not torch's random stream.
func Sample(logits []float32, temperature float64, rng *rand.Rand) (int, error) {
	if !(temperature > 0) {
		return 0, fmt.Errorf("%w: sampling temperature %v", ErrBadOption, temperature)
	}
	m := math.Inf(-1)
	for _, v := range logits {
		m = max(m, float64(v))
	}
	if math.IsInf(m, -1) || math.IsNaN(m) {
		return 0, ErrNoCandidate
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp((float64(v) - m) / temperature)
	}
	u := rng.Float64() * sum
	last := -1
	for i, v := range logits {
		p := math.Exp((float64(v) - m) / temperature)
		if p == 0 {
			continue
		}
		last = i
		u -= p
		if u < 0 {
			return i, nil
		}
	}
	return last, nil // rounding left u >= 0: the last possible token
}

// Select picks the next token at the given temperature (greedy at 0, sampling above) and
// returns it with its log probability under the filtered logits, which is what whisper's
// GreedyDecoder adds to sum_logprobs.
func Select(logits []float32, temperature float64, rng *rand.Rand) (int, float64, error) {
	var (
		id  int
		err error
	)
	if temperature == 0 {
		id, err = Greedy(logits)
	} else {
		id, err = Sample(logits, temperature, rng)
	}
	if err != nil {
		return 0, 0, err
	}
	return id, LogProb(logits, id), nil
}

// NoSpeechProb is softmax(logits)[<|nospeech|>] over the raw (unfiltered) logits of the
// <|startoftranscript|> position at the first step.
func NoSpeechProb(logitsAtSOT []float32, noSpeech int) float64 {
	return math.Exp(LogProb(logitsAtSOT, noSpeech))
}

// Language is the result of language detection.
type Language struct {
	Code  string
	Token int
	// Probs maps each language code of the vocabulary to its probability.
	Probs map[string]float64
}

// DetectLanguage is whisper's detect_language over the logits of the first step after
// <|startoftranscript|>: every non-language token is masked, the likeliest language wins
// (the first on ties), and the probabilities are the softmax over the language tokens.
func DetectLanguage(logits []float32, tok *whispertokenizer.Tokenizer) (Language, error) {
	if len(logits) != tok.NVocab() {
		return Language{}, fmt.Errorf("%w: %d logits, n_vocab %d", ErrLogitsSize, len(logits), tok.NVocab())
	}
	ids, codes := tok.LanguageTokens(), tok.LanguageCodes()
	lang := make([]float32, len(ids))
	for i, id := range ids {
		lang[i] = logits[id]
	}
	best, err := Greedy(lang)
	if err != nil {
		return Language{}, err
	}
	lse := logSumExp(lang)
	probs := make(map[string]float64, len(ids))
	for i, c := range codes {
		probs[c] = math.Exp(float64(lang[i]) - lse)
	}
	return Language{Code: codes[best], Token: ids[best], Probs: probs}, nil
}

// CompressionRatio is whisper's compression_ratio: UTF-8 length over zlib-compressed length,
// with the compressed length exactly as Python's zlib.compress (level 6) gives it.
func CompressionRatio(text string) float64 {
	return float64(len(text)) / float64(zlibCompressedLen([]byte(text)))
}

// AvgLogProb is whisper's avg_logprob: the sum of the sampled tokens' log probabilities over
// the number of tokens before EOT plus one (the EOT).
func AvgLogProb(sumLogProb float64, nTokens int) float64 {
	return sumLogProb / float64(nTokens+1)
}

// Strip is Python's str.strip(): it trims the characters str.isspace() accepts, which are
// Go's white space plus the separators U+001C..U+001F.
func Strip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
	})
}

// WindowText is DecodingResult.text: Decode (timestamps dropped) of the sampled tokens,
// stripped.
func WindowText(tok *whispertokenizer.Tokenizer, sampled []int) (string, error) {
	s, err := tok.Decode(sampled)
	if err != nil {
		return "", err
	}
	return Strip(s), nil
}

// Stats are the numbers of one decoded window that the fallback and skip decisions use.
type Stats struct {
	AvgLogProb       float64
	CompressionRatio float64
	NoSpeechProb     float64
}

// Thresholds are transcribe()'s thresholds; NaN disables one, as None does in whisper.
type Thresholds struct {
	CompressionRatio float64 // compression_ratio_threshold, default 2.4
	LogProb          float64 // logprob_threshold, default -1.0
	NoSpeech         float64 // no_speech_threshold, default 0.6
}

// DefaultThresholds are whisper's transcribe() defaults.
func DefaultThresholds() Thresholds {
	return Thresholds{CompressionRatio: 2.4, LogProb: -1.0, NoSpeech: 0.6}
}

// NeedsFallback is decode_with_fallback's test: decode again at the next temperature when
// the text is too repetitive (compression ratio above the threshold) or too improbable
// (average log probability below the threshold), unless the window is silence (no-speech
// probability above its threshold while the log probability is low).
func (th Thresholds) NeedsFallback(s Stats) bool {
	needs := s.CompressionRatio > th.CompressionRatio || s.AvgLogProb < th.LogProb
	if s.NoSpeechProb > th.NoSpeech && s.AvgLogProb < th.LogProb {
		needs = false
	}
	return needs
}

// ShouldSkip is transcribe()'s no-voice check on the final result of a window: skip it when
// the no-speech probability is above the threshold, unless the average log probability is
// above the log-probability threshold.
func (th Thresholds) ShouldSkip(s Stats) bool {
	skip := s.NoSpeechProb > th.NoSpeech
	if s.AvgLogProb > th.LogProb {
		skip = false
	}
	return skip
}

// Temperatures is transcribe()'s fallback schedule:
// tuple(np.arange(start, 1.0 + 1e-6, increment)), i.e. start, start+increment, ... up to 1.0.
// An increment <= 0 gives only start (whisper's temperature_increment_on_fallback None).
func Temperatures(start, increment float64) []float64 {
	if !(increment > 0) {
		return []float64{start}
	}
	// np.arange computes ceil((stop - start) / step) values start + i*step.
	n := int(math.Ceil((1.0 + 1e-6 - start) / increment))
	out := make([]float64, 0, max(n, 0))
	for i := range n {
		out = append(out, start+float64(i)*increment)
	}
	return out
}
