// Package simaudio is the Whisper family's simulated runner (MODEL_RUNNER=tt-whisper without
// model files, and MODEL_RUNNER=mock with MODEL_SERVICE=audio): instead of words it states
// what it measured of each piece of audio, and it spends the real model's device time on the
// simulated device (runners/simdev): the encoder once per 30 s window, then the decoder steps.
package simaudio

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// The device programs of the simulated Whisper and their shape: one encoder run per window of
// audio, and decoder steps per second of audio (speech is ~2-3 tokens/s).
const (
	progEncoder       = "whisper-encoder"
	progDecoder       = "whisper-decoder-step"
	whisperWindow     = 30.0
	tokensPerAudioSec = 3.0
)

// speaker is the one speaker the mock diarization finds.
const speaker = "SPEAKER_00"

// audioRunner is the mock Whisper device.
type audioRunner struct {
	lat simdev.Latency
	// dev is the simulated device in a worker process; without one, time is Go sleeps.
	dev    simdev.Stepper
	closed atomic.Bool
}

// New returns the simulated Whisper (tt-whisper) runner. Instead of words it transcribes each
// piece of audio (each VAD segment, or the whole audio without pre-processing) as a plain
// statement of what it measured, e.g. "[simulated transcription: 2.41 s of speech, peak
// -3.1 dBFS, RMS -17.9 dBFS]". It takes PerAudioSec per second of audio, paced across the
// pieces (and across the words when streaming).
func New(lat simdev.Latency) runners.Runner { return &audioRunner{lat: lat} }

// Factory is the registry factory of the simulated Whisper: MOCK_* latencies, and the
// simulated device of the worker (simdev.ConfigFor).
func Factory(spec runners.WorkerSpec) (runners.Runner, error) {
	r := &audioRunner{lat: simdev.LatencyFrom(spec.Settings)}
	r.dev.Cfg = simdev.ConfigFor(catalogue.RunnerWhisper, spec)
	return r, nil
}

// DeviceInfo describes the runner's simulated device; ok is false when its time is Go sleeps.
func (r *audioRunner) DeviceInfo() (ttnn.DeviceInfo, bool) { return r.dev.Info() }

// Warmup simulates loading the model, then transcribes 1 s of silence as the Python runner does.
func (r *audioRunner) Warmup(ctx context.Context) error {
	if r.closed.Load() {
		return simdev.ErrClosed
	}
	if err := simdev.Sleep(ctx, r.lat.Warmup); err != nil {
		return fmt.Errorf("whisper warm-up: %w", err)
	}
	if err := r.dev.Open(ctx); err != nil {
		return fmt.Errorf("whisper warm-up: %w", err)
	}
	req := &runners.AudioRequest{Samples: make([]float32, 16000), SampleRate: 16000, Duration: 1}
	if _, err := r.transcribe(ctx, req, nil); err != nil {
		return fmt.Errorf("whisper warm-up inference: %w", err)
	}
	return nil
}

// Run transcribes each task's audio.
func (r *audioRunner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	if r.closed.Load() {
		return simdev.ClosedOutcomes(len(tasks))
	}
	return simdev.RunBatch(ctx, tasks, func(ctx context.Context, t runners.Task) (runners.Result, error) {
		req, err := runners.RequestAs[*runners.AudioRequest](t)
		if err != nil || req == nil {
			return nil, fmt.Errorf("whisper: request is %T, not *runners.AudioRequest", t.Request)
		}
		return r.transcribe(ctx, req, t.Emit)
	})
}

// Close marks the runner closed and closes its device; it is idempotent.
func (r *audioRunner) Close() error {
	r.closed.Store(true)
	return r.dev.Close()
}

// transcribe produces the result, streaming word chunks through emit when it is not nil.
func (r *audioRunner) transcribe(ctx context.Context, req *runners.AudioRequest, emit func(runners.Chunk) error) (*runners.TranscriptionResult, error) {
	sr := req.SampleRate
	if sr <= 0 {
		sr = 16000
	}
	duration := req.Duration
	if duration <= 0 {
		duration = float64(len(req.Samples)) / float64(sr)
	}
	// Pieces: the VAD segments, or the whole audio. Like the Python diarization, an empty
	// segment list falls back to one segment covering everything.
	diarized := req.Segments != nil
	pieces := req.Segments
	if len(pieces) == 0 {
		pieces = []runners.Span{{Start: 0, End: duration}}
	}
	var total float64
	for _, s := range pieces {
		total += math.Max(0, s.End-s.Start)
	}
	budget := time.Duration(float64(r.lat.PerAudioSec) * duration)

	res := &runners.TranscriptionResult{Task: "transcribe", Language: "english", Duration: duration}
	texts := make([]string, 0, len(pieces))
	chunkID := 0
	for i, s := range pieces {
		share := budget / time.Duration(len(pieces))
		if total > 0 {
			share = time.Duration(float64(budget) * math.Max(0, s.End-s.Start) / total)
		}
		text := describe(req.Samples, sr, s, diarized)
		// On the device: the encoder once per 30 s window, then the decoder steps.
		length := math.Max(0, s.End-s.Start)
		steps := max(1, int(math.Round(tokensPerAudioSec*length)))
		if err := r.dev.Run(ctx, progEncoder, max(1, int(math.Ceil(length/whisperWindow))), 0); err != nil {
			return nil, fmt.Errorf("whisper: encoder, piece %d of %d: %w", i+1, len(pieces), err)
		}
		if emit == nil {
			if err := r.dev.Run(ctx, progDecoder, steps, share); err != nil {
				return nil, fmt.Errorf("whisper: decoding piece %d of %d: %w", i+1, len(pieces), err)
			}
		} else {
			words := strings.Fields(text)
			for w, word := range words {
				n := steps*(w+1)/len(words) - steps*w/len(words)
				if err := r.dev.Run(ctx, progDecoder, n, share/time.Duration(len(words))); err != nil {
					return nil, fmt.Errorf("whisper: decoding after %d chunks: %w", chunkID, err)
				}
				if w == 0 && diarized {
					word = "[" + speaker + "] " + word
				}
				chunkID++
				if err := emit(runners.TranscriptChunk{Text: word, ChunkID: chunkID}); err != nil {
					return nil, fmt.Errorf("whisper: emit chunk %d: %w", chunkID, err)
				}
			}
		}
		texts = append(texts, text)
		if diarized {
			res.Segments = append(res.Segments, runners.TranscriptionSegment{
				ID:        i,
				Speaker:   speaker,
				StartTime: round3(s.Start),
				EndTime:   round3(s.End),
				Text:      text,
			})
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("whisper: cancelled: %w", err)
	}
	res.Text = strings.Join(texts, " ")
	if diarized {
		res.Speakers = []string{speaker}
		res.SpeakerCount = 1
	}
	return res, nil
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// describe states what the piece s of the audio holds: its length, peak and RMS level.
func describe(samples []float32, sr int, s runners.Span, speech bool) string {
	length := math.Max(0, s.End-s.Start)
	lo := max(0, min(len(samples), int(math.Floor(s.Start*float64(sr)))))
	hi := max(lo, min(len(samples), int(math.Ceil(s.End*float64(sr)))))
	var peak, sum float64
	for _, v := range samples[lo:hi] {
		a := math.Abs(float64(v))
		peak = max(peak, a)
		sum += a * a
	}
	kind := "audio"
	if speech {
		kind = "speech"
	}
	if peak == 0 {
		return fmt.Sprintf("[simulated transcription: %.2f s of silence]", length)
	}
	rms := math.Sqrt(sum / float64(hi-lo))
	return fmt.Sprintf("[simulated transcription: %.2f s of %s, peak %.1f dBFS, RMS %.1f dBFS]",
		length, kind, 20*math.Log10(peak), 20*math.Log10(rms))
}
