// Package whisper is the Whisper family's public API for the layers above it (the HTTP server):
// what they may ask of the family — the language table, Whisper's compression ratio of a text,
// and the fan-out of one long transcription into several scheduler jobs — without importing its
// internals (tokenizer/, decoding/, fanout/), which may change shape freely behind it.
package whisper

import (
	"context"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/decoding"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/fanout"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
)

// NormalizeLanguage maps a language name or code ("English", "en") to Whisper's code; an
// unknown one is an error naming it.
func NormalizeLanguage(language string) (string, error) {
	return whispertokenizer.NormalizeLanguage(language)
}

// LanguageName is a Whisper language code's English name ("en" → "english").
func LanguageName(code string) (string, bool) { return whispertokenizer.LanguageName(code) }

// CompressionRatio is Whisper's gzip compression ratio of a text (bytes / zlib bytes), the
// figure its decoder's fallback compares with compression_ratio_threshold.
func CompressionRatio(text string) float64 { return decoding.CompressionRatio(text) }

// MaxChunkSeconds is the longest chunk of a fanned-out transcription: Whisper's 30 s window.
const MaxChunkSeconds = fanout.MaxChunkSeconds

// Plan is a long transcription cut into chunks along its speech segments.
type Plan = fanout.Plan

// SubmitFunc submits one chunk's job (the scheduler's Submit).
type SubmitFunc = fanout.SubmitFunc

// Split cuts req into chunks of at most maxSeconds (0: MaxChunkSeconds) along its speech
// segments, balanced for workers.
func Split(req *runners.AudioRequest, maxSeconds float64, workers int) Plan {
	return fanout.Split(req, maxSeconds, workers)
}

// Run submits the plan's chunks in file order, relays their streamed output in order and
// merges their results.
func Run(ctx context.Context, submit SubmitFunc, plan Plan, emit func(runners.Chunk) error) (*runners.TranscriptionResult, error) {
	return fanout.Run(ctx, submit, plan, emit)
}
