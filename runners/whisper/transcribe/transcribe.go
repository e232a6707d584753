// Package transcribe is openai/whisper's transcribe() and DecodingTask over an abstract
// model: the per-window decoding loop (prompt and sot sequence, no-speech probability,
// logit filters, greedy or sampled tokens up to sample_len, temperature fallback) and the
// long-form loop over 30-second windows of the log-mel of the whole audio (language
// detection, prompt conditioning on the previous text, no-speech skipping, seek advance
// from the last timestamp, segments re-based to the file). It owns no device: the Model
// interface is what a runner implements on top of its encoder and decoder-step programs.
package transcribe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/tenstorrent/tt-media-server-go/media/audio"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/decoding"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/segment"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
)

// ErrBadOptions reports Options that whisper would reject or that cannot work.
var ErrBadOptions = errors.New("bad transcription options")

// EncoderState is a model's encoded window (whisper's audio_features), opaque to this
// package. When it implements io.Closer, Transcribe closes it once the window is decoded,
// so a device runner can free or recycle the buffer.
type EncoderState any

// Model is a whisper model as the decoding loop sees it.
//
// Encode runs the encoder over one window's log-mel features: nMels rows of
// segment.NFrames values, row-major (value(m, t) at m*NFrames+t).
//
// DecodeStep feeds tokens to the decoder at positions offset, offset+1, ... of the token
// sequence of state and returns the logits (n_vocab values) at the last of them. offset 0
// starts a new sequence (discarding any cached keys and values of an earlier one on the same
// state); a later call continues the sequence, with offset equal to the number of tokens fed
// so far. This is the shape a KV-cached decoder wants: the prompt is fed in at most two
// chunks, then one sampled token per call. A stateless model may keep the tokens and rerun
// the whole sequence. Transcribe owns the returned slice and may modify it.
type Model interface {
	Encode(ctx context.Context, mel []float32, nMels int) (EncoderState, error)
	DecodeStep(ctx context.Context, state EncoderState, tokens []int, offset int) ([]float32, error)
}

// Options are transcribe()'s arguments and the DecodingOptions it passes to every window.
// Start from DefaultOptions: the zero value is not whisper's default.
type Options struct {
	// Language is a whisper language code or name; "" detects it from the first window
	// (English for English-only vocabularies).
	Language string
	// Task is transcribe or translate ("" means transcribe).
	Task whispertokenizer.Task
	// InitialPrompt is text that conditions the first window (and later ones, until the
	// prompt is reset).
	InitialPrompt string
	// ConditionOnPreviousText feeds the text decoded so far as the prompt of the next window.
	// The prompt is reset after a window decoded at a temperature above 0.5 regardless.
	ConditionOnPreviousText bool
	// Temperatures is the fallback schedule, tried in order (default 0, 0.2, ... 1.0).
	Temperatures []float64
	// Thresholds decide fallback and no-speech skipping; NaN disables one.
	Thresholds decoding.Thresholds
	// Decoding shapes the logit filters (suppress_tokens, suppress_blank, timestamps).
	Decoding decoding.Options
	// SampleLen is the maximum number of tokens sampled per window (default NTextCtx/2).
	SampleLen int
	// NTextCtx is the decoder's context length (n_text_ctx, 448 for every whisper model).
	NTextCtx int
	// NMels is the number of mel bins the encoder takes (80, or 128 for large-v3).
	NMels int
	// Seed seeds the sampler used at temperatures above 0.
	Seed uint64
	// OnWindow, when not nil, is told after each window is final (decoded or skipped as
	// silence): the seek of the next window and the audio's content frames, both in mel
	// frames (100 per second).
	OnWindow func(seek, contentFrames int)
}

// DefaultOptions are transcribe()'s defaults for an 80-mel model.
func DefaultOptions() Options {
	return Options{
		ConditionOnPreviousText: true,
		Temperatures:            decoding.Temperatures(0, 0.2),
		Thresholds:              decoding.DefaultThresholds(),
		Decoding:                decoding.DefaultOptions(),
		SampleLen:               224,
		NTextCtx:                448,
		NMels:                   80,
	}
}

// Segment is one timed piece of the transcript, with the figures of the window it came
// from (the fields of OpenAI's verbose_json segments).
type Segment struct {
	ID   int
	Seek int // mel frame where its window starts
	// Start and End are in seconds from the start of the audio.
	Start, End float64
	// Text is the segment's text with its leading space; "" for an instantaneous or blank
	// segment.
	Text string
	// Tokens are the sampled tokens of the segment, timestamps included.
	Tokens                                                  []int
	Temperature, AvgLogProb, CompressionRatio, NoSpeechProb float64
}

// Result is a whole transcription.
type Result struct {
	// Text is the decode of every segment's tokens (initial prompt excluded), unstripped as
	// whisper returns it.
	Text     string
	Segments []Segment
	// Language is the code given or detected.
	Language string
	// LanguageProbs holds the detection probabilities when the language was detected.
	LanguageProbs map[string]float64
}

// windowResult is DecodingResult: one window decoded at one temperature.
type windowResult struct {
	// Tokens are the sampled tokens between the prompt and EOT.
	Tokens []int
	// Text is the decode of Tokens, stripped.
	Text  string
	Stats decoding.Stats
	// Temperature is the temperature it was decoded at.
	Temperature float64
}

// Transcribe runs transcribe() over samples (mono, 16 kHz): the log-mel of each 30-second
// window starting at seek is encoded and decoded with temperature fallback, windows that
// are silence are skipped, the others are split into segments at their timestamp tokens,
// and seek advances to the last complete segment (or past the window). onSegment, when not
// nil, receives each segment, in order, as soon as its window is final. Cancellation is
// checked before every encoder and decoder call; the segments completed before it are
// returned with the error. The model's methods are called from the calling goroutine only.
//
// As in whisper, the log-mel of the whole file (with 30 s of zeros appended) is computed
// once, so its floor (maximum - 8) is the file's; each window is a slice of it, with the
// frames past the window's audio zeroed (pad_or_trim of the mel slice), and language
// detection sees the first 3000 frames unzeroed.
func Transcribe(ctx context.Context, model Model, tok *whispertokenizer.Tokenizer, samples []float32, opts Options, onSegment func(Segment)) (Result, error) {
	t, err := newTask(model, tok, opts)
	if err != nil {
		return Result{}, err
	}
	lm, err := audio.WhisperLogMel(opts.NMels)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	full, err := lm.ComputeFull(ctx, samples)
	if err != nil {
		return Result{}, fmt.Errorf("transcribe: log-mel: %w", err)
	}
	contentFrames := full.ContentFrames()
	var res Result
	var melBuf []float32
	window := func(seek, frames int) ([]float32, error) {
		var err error
		if melBuf, err = full.Window(seek, frames, melBuf); err != nil {
			return nil, fmt.Errorf("transcribe: log-mel at frame %d: %w", seek, err)
		}
		return melBuf, nil
	}

	// Language: given, English for English-only models, or detected on the first 30 s.
	var firstState EncoderState
	defer func() { closeState(firstState) }()
	switch {
	case opts.Language != "":
		code, err := whispertokenizer.NormalizeLanguage(opts.Language)
		if err != nil {
			return Result{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
		res.Language = code
	case !tok.Multilingual():
		res.Language = "en"
	default:
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("transcribe: %w", err)
		}
		m, err := window(0, segment.NFrames) // whisper's pad_or_trim(mel, N_FRAMES)
		if err != nil {
			return res, err
		}
		st, err := model.Encode(ctx, m, opts.NMels)
		if err != nil {
			return res, fmt.Errorf("transcribe: encode for language detection: %w", err)
		}
		lang, err := t.detectLanguage(ctx, st)
		if contentFrames >= segment.NFrames {
			firstState = st // the first window's features are the same: reuse them
		} else {
			closeState(st)
		}
		if err != nil {
			return res, err
		}
		res.Language, res.LanguageProbs = lang.Code, lang.Probs
	}
	if err := t.setSOT(res.Language); err != nil {
		return res, err
	}

	allTokens := decoding.TextPromptTokens(tok, opts.InitialPrompt)
	nInitial := len(allTokens)
	promptResetSince := 0
	for seek := 0; seek < contentFrames; {
		if err := ctx.Err(); err != nil {
			return t.finish(res, allTokens[nInitial:]), fmt.Errorf("transcribe: %w", err)
		}
		frames := min(segment.NFrames, contentFrames-seek)
		st := firstState
		firstState = nil
		if st == nil {
			m, err := window(seek, frames)
			if err != nil {
				return t.finish(res, allTokens[nInitial:]), err
			}
			st, err = model.Encode(ctx, m, opts.NMels)
			if err != nil {
				return t.finish(res, allTokens[nInitial:]), fmt.Errorf("transcribe: encode window at frame %d: %w", seek, err)
			}
		}
		wr, err := t.decodeWithFallback(ctx, st, allTokens[promptResetSince:])
		closeState(st)
		if err != nil {
			return t.finish(res, allTokens[nInitial:]), fmt.Errorf("transcribe: window at frame %d: %w", seek, err)
		}
		if opts.Thresholds.ShouldSkip(wr.Stats) {
			seek += frames
			if opts.OnWindow != nil {
				opts.OnWindow(seek, contentFrames)
			}
			continue
		}
		segs, next, err := segment.Split(tok, segment.Window{
			Seek: seek, Frames: frames, Tokens: wr.Tokens, Temperature: wr.Temperature,
			AvgLogProb: wr.Stats.AvgLogProb, CompressionRatio: wr.Stats.CompressionRatio,
			NoSpeechProb: wr.Stats.NoSpeechProb,
		})
		if err != nil {
			return t.finish(res, allTokens[nInitial:]), fmt.Errorf("transcribe: window at frame %d: %w", seek, err)
		}
		for _, s := range segs {
			out := Segment{
				ID: len(res.Segments), Seek: s.Seek, Start: s.Start, End: s.End, Text: s.Text,
				Tokens: s.Tokens, Temperature: s.Temperature, AvgLogProb: s.AvgLogProb,
				CompressionRatio: s.CompressionRatio, NoSpeechProb: s.NoSpeechProb,
			}
			res.Segments = append(res.Segments, out)
			allTokens = append(allTokens, s.Tokens...)
			if onSegment != nil {
				onSegment(out)
			}
		}
		if !opts.ConditionOnPreviousText || wr.Temperature > 0.5 {
			promptResetSince = len(allTokens)
		}
		seek = next
		if opts.OnWindow != nil {
			opts.OnWindow(seek, contentFrames)
		}
	}
	return t.finish(res, allTokens[nInitial:]), nil
}

// task is what stays fixed over one transcription: DecodingTask's tokenizer-derived parts.
type task struct {
	model   Model
	tok     *whispertokenizer.Tokenizer
	opts    Options
	filters *decoding.Filters
	sot     []int // the sot sequence, set once the language is known
	rng     *rand.Rand
}

func newTask(model Model, tok *whispertokenizer.Tokenizer, opts Options) (*task, error) {
	switch {
	case model == nil || tok == nil:
		return nil, fmt.Errorf("%w: nil model or tokenizer", ErrBadOptions)
	case opts.NTextCtx < 2:
		return nil, fmt.Errorf("%w: n_text_ctx %d", ErrBadOptions, opts.NTextCtx)
	case opts.SampleLen < 1 || opts.SampleLen > opts.NTextCtx:
		return nil, fmt.Errorf("%w: sample_len %d with n_text_ctx %d", ErrBadOptions, opts.SampleLen, opts.NTextCtx)
	case len(opts.Temperatures) == 0:
		return nil, fmt.Errorf("%w: no temperature", ErrBadOptions)
	}
	for _, temp := range opts.Temperatures {
		if !(temp >= 0) || math.IsInf(temp, 1) {
			return nil, fmt.Errorf("%w: temperature %v", ErrBadOptions, temp)
		}
	}
	if opts.Task != "" && opts.Task != whispertokenizer.TaskTranscribe && opts.Task != whispertokenizer.TaskTranslate {
		return nil, fmt.Errorf("%w: task %q", ErrBadOptions, opts.Task)
	}
	f, err := decoding.NewFilters(tok, opts.Decoding)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	return &task{
		model: model, tok: tok, opts: opts, filters: f,
		rng: rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15)),
	}, nil
}

func (t *task) setSOT(language string) error {
	sot, err := t.tok.SOTSequence(language, t.opts.Task, t.opts.Decoding.WithoutTimestamps)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	t.sot = sot
	return nil
}

// detectLanguage is detect_language: one decoder step over <|startoftranscript|>.
func (t *task) detectLanguage(ctx context.Context, st EncoderState) (decoding.Language, error) {
	if err := ctx.Err(); err != nil {
		return decoding.Language{}, fmt.Errorf("transcribe: %w", err)
	}
	logits, err := t.model.DecodeStep(ctx, st, []int{t.tok.SOT()}, 0)
	if err != nil {
		return decoding.Language{}, fmt.Errorf("transcribe: language detection step: %w", err)
	}
	lang, err := decoding.DetectLanguage(logits, t.tok)
	if err != nil {
		return decoding.Language{}, fmt.Errorf("transcribe: language detection: %w", err)
	}
	return lang, nil
}

// decodeWithFallback is decode_with_fallback: decode at each temperature in turn until the
// result is neither too repetitive nor too improbable (or is silence).
func (t *task) decodeWithFallback(ctx context.Context, st EncoderState, prompt []int) (windowResult, error) {
	var r windowResult
	for _, temp := range t.opts.Temperatures {
		var err error
		r, err = t.decode(ctx, st, prompt, temp)
		if err != nil {
			return r, err
		}
		if !t.opts.Thresholds.NeedsFallback(r.Stats) {
			break
		}
	}
	return r, nil
}

// decode is DecodingTask.run for one window at one temperature (greedy or sampling, no beam
// search).
func (t *task) decode(ctx context.Context, st EncoderState, prompt []int, temp float64) (windowResult, error) {
	initial := decoding.InitialTokens(t.tok, t.sot, prompt, nil, t.opts.NTextCtx, t.opts.SampleLen)
	sotIndex := len(initial) - len(t.sot)
	step := func(tokens []int, offset int) ([]float32, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l, err := t.model.DecodeStep(ctx, st, tokens, offset)
		if err != nil {
			return nil, fmt.Errorf("decoder step at position %d: %w", offset, err)
		}
		if len(l) != t.tok.NVocab() {
			return nil, fmt.Errorf("decoder step at position %d: %w: %d logits, n_vocab %d", offset, decoding.ErrLogitsSize, len(l), t.tok.NVocab())
		}
		return l, nil
	}
	// The no-speech probability is read at the <|startoftranscript|> position, so the prompt
	// is fed up to it first, then the rest of the sot sequence.
	logits, err := step(initial[:sotIndex+1], 0)
	if err != nil {
		return windowResult{}, err
	}
	noSpeech := decoding.NoSpeechProb(logits, t.tok.NoSpeech())
	if sotIndex+1 < len(initial) {
		if logits, err = step(initial[sotIndex+1:], sotIndex+1); err != nil {
			return windowResult{}, err
		}
	}
	var sampled []int
	sum := 0.0
	for i := range t.opts.SampleLen {
		if i > 0 {
			if logits, err = step(sampled[len(sampled)-1:], len(initial)+len(sampled)-1); err != nil {
				return windowResult{}, err
			}
		}
		if err := t.filters.Apply(logits, sampled); err != nil {
			return windowResult{}, fmt.Errorf("logit filters: %w", err)
		}
		id, lp, err := decoding.Select(logits, temp, t.rng)
		if err != nil {
			return windowResult{}, fmt.Errorf("token selection: %w", err)
		}
		sum += lp
		if id == t.tok.EOT() {
			break
		}
		sampled = append(sampled, id)
		if len(initial)+len(sampled) > t.opts.NTextCtx {
			break
		}
	}
	text, err := decoding.WindowText(t.tok, sampled)
	if err != nil {
		return windowResult{}, fmt.Errorf("window text: %w", err)
	}
	return windowResult{
		Tokens: sampled, Text: text, Temperature: temp,
		Stats: decoding.Stats{
			AvgLogProb:       decoding.AvgLogProb(sum, len(sampled)),
			CompressionRatio: decoding.CompressionRatio(text),
			NoSpeechProb:     noSpeech,
		},
	}, nil
}

// finish sets the full text: the decode of every segment token after the initial prompt.
func (t *task) finish(res Result, tokens []int) Result {
	text, err := t.tok.Decode(tokens)
	if err == nil {
		res.Text = text
	}
	return res
}

func closeState(st EncoderState) {
	if c, ok := st.(io.Closer); ok {
		_ = c.Close()
	}
}
