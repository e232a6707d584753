package whisperrunner

// One request's transcription: its decoding options, its speech pieces, and the
// transcribe() loop over them.

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/decoding"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/segment"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/transcribe"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
)

// badRequest is a request the runner rejects: its text is the message for the client.
type badRequest struct{ err error }

func (e *badRequest) Error() string        { return e.err.Error() }
func (e *badRequest) Unwrap() error        { return e.err }
func (e *badRequest) Is(target error) bool { return target == runners.ErrBadRequest }

// options are the transcription options of a request.
func (r *Runner) options(req *runners.AudioRequest) (transcribe.Options, error) {
	opts := transcribe.DefaultOptions()
	opts.NMels = r.nMels
	opts.Seed = r.cfg.Seed
	if req.Language != "" {
		code, err := whispertokenizer.NormalizeLanguage(req.Language)
		if err != nil {
			return opts, &badRequest{err}
		}
		if _, err := r.tok.LanguageToken(code); err != nil {
			return opts, &badRequest{err}
		}
		opts.Language = code
	}
	switch whispertokenizer.Task(req.Task) {
	case "", whispertokenizer.TaskTranscribe:
		opts.Task = whispertokenizer.TaskTranscribe
	case whispertokenizer.TaskTranslate:
		if !r.tok.Multilingual() {
			return opts, &badRequest{fmt.Errorf("%w: an English-only model cannot translate", whispertokenizer.ErrNotMultilingual)}
		}
		opts.Task = whispertokenizer.TaskTranslate
	default:
		return opts, &badRequest{fmt.Errorf("%w: %q (transcribe or translate)", whispertokenizer.ErrUnknownTask, req.Task)}
	}
	if !(req.Temperature >= 0 && req.Temperature <= 1) {
		return opts, &badRequest{fmt.Errorf("temperature %v not in [0, 1]", req.Temperature)}
	}
	opts.Temperatures = decoding.Temperatures(req.Temperature, 0.2)
	if d := req.Decode; len(d.Temperatures) > 0 {
		for _, t := range d.Temperatures {
			if !(t >= 0 && t <= 1) {
				return opts, &badRequest{fmt.Errorf("temperatures: %v not in [0, 1]", t)}
			}
		}
		opts.Temperatures = slices.Clone(d.Temperatures)
	}
	for _, th := range []struct {
		v   *float64
		dst *float64
	}{
		{req.Decode.CompressionRatioThreshold, &opts.Thresholds.CompressionRatio},
		{req.Decode.LogprobThreshold, &opts.Thresholds.LogProb},
		{req.Decode.NoSpeechThreshold, &opts.Thresholds.NoSpeech},
	} {
		if th.v != nil {
			if math.IsInf(*th.v, 0) || math.IsNaN(*th.v) {
				return opts, &badRequest{fmt.Errorf("decoding threshold %v is not a finite number", *th.v)}
			}
			*th.dst = *th.v
		}
	}
	opts.InitialPrompt = req.Prompt
	return opts, nil
}

// piece is a stretch of the request's audio transcribed on its own.
type piece struct {
	samples []float32
	offset  float64 // seconds from the start of the file
}

// sampleSlack is how far, in samples, a span's time times the sample rate may miss a whole
// sample and still count as that sample. Span times reach the runner as differences (a
// fanned-out chunk's segments are the file's minus the chunk's offset), which carry float
// error of about 1e-9 samples: 31.646 s arrives as 31.645999999999997, whose floor at
// 16 kHz would be one sample short. Snapping keeps a speech span's samples, and so what the
// encoder sees, the same however the file was chunked.
const sampleSlack = 1e-6

// splitPieces is the audio of each speech span (all of samples without spans): the samples
// from the span's start (rounded down to a sample) to its end (rounded up), clamped to the
// audio.
func splitPieces(samples []float32, spans []runners.Span) []piece {
	if len(spans) == 0 {
		return []piece{{samples: samples}}
	}
	pieces := make([]piece, 0, len(spans))
	for _, s := range spans {
		lo := max(0, min(len(samples), int(math.Floor(s.Start*segment.SampleRate+sampleSlack))))
		hi := max(lo, min(len(samples), int(math.Ceil(s.End*segment.SampleRate-sampleSlack))))
		pieces = append(pieces, piece{samples: samples[lo:hi], offset: float64(lo) / segment.SampleRate})
	}
	return pieces
}

// transcribe runs the long-form loop over each piece of the request's audio.
func (r *Runner) transcribe(ctx context.Context, model transcribe.Model, t runners.Task, req *runners.AudioRequest) (*runners.TranscriptionResult, error) {
	opts, err := r.options(req)
	if err != nil {
		return nil, err
	}
	if req.SampleRate != 0 && req.SampleRate != segment.SampleRate {
		return nil, &badRequest{fmt.Errorf("audio at %d Hz, the runner takes %d Hz", req.SampleRate, segment.SampleRate)}
	}
	duration := req.Duration
	if duration <= 0 {
		duration = float64(len(req.Samples)) / segment.SampleRate
	}
	diarized := req.Segments != nil
	pieces := splitPieces(req.Samples, req.Segments)
	remaining := 0 // mel frames not yet transcribed, for the progress estimate
	for _, p := range pieces {
		remaining += len(p.samples) / segment.HopLength
	}
	windows := 0
	res := &runners.TranscriptionResult{Task: string(opts.Task), Duration: duration}
	var emitErr error
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	texts := make([]string, 0, len(pieces))
	for _, p := range pieces {
		done := 0 // frames of this piece behind seek
		opts.OnWindow = func(seek, contentFrames int) {
			remaining -= seek - done
			done = seek
			windows++
			if t.Progress != nil {
				t.Progress(windows, windows+(remaining+segment.NFrames-1)/segment.NFrames)
			}
		}
		onSegment := func(s transcribe.Segment) {
			seg := runners.TranscriptionSegment{
				ID: len(res.Segments), StartTime: round3(p.offset + s.Start), EndTime: round3(p.offset + s.End),
				Text: decoding.Strip(s.Text), Seek: s.Seek + int(math.Round(p.offset*segment.FramesPerSecond)),
				Tokens: s.Tokens, Temperature: s.Temperature, AvgLogprob: s.AvgLogProb,
				CompressionRatio: s.CompressionRatio, NoSpeechProb: s.NoSpeechProb,
			}
			if diarized {
				seg.Speaker = speaker
			}
			res.Segments = append(res.Segments, seg)
			if t.Emit == nil || seg.Text == "" || emitErr != nil {
				return
			}
			text := seg.Text
			if diarized {
				text = "[" + speaker + "] " + text
			}
			if err := t.Emit(runners.TranscriptChunk{Text: text, ChunkID: len(res.Segments)}); err != nil {
				emitErr = fmt.Errorf("%s: emit segment %d: %w", catalogue.RunnerWhisper, seg.ID, err)
				cancel(emitErr)
			}
		}
		out, err := transcribe.Transcribe(ctx, model, r.tok, p.samples, opts, onSegment)
		if emitErr != nil {
			return nil, emitErr
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", catalogue.RunnerWhisper, simdev.DeviceErr(err))
		}
		if opts.Language == "" { // the first piece's language holds for the others
			opts.Language = out.Language
		}
		if text := decoding.Strip(out.Text); text != "" {
			texts = append(texts, text)
		}
	}
	res.Language = opts.Language
	if name, ok := whispertokenizer.LanguageName(opts.Language); ok {
		res.Language = name
	}
	for i, s := range texts {
		if i > 0 {
			res.Text += " "
		}
		res.Text += s
	}
	if diarized {
		res.Speakers, res.SpeakerCount = []string{speaker}, 1
	}
	return res, nil
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
