package server

import (
	"fmt"
	"math"
	"strings"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper"
)

// Tasks of the two audio routes, as verbose_json's "task" names them.
const (
	taskTranscribe = "transcribe"
	taskTranslate  = "translate"
)

// transcriptSpan is one timed piece of a transcript, the input of every text format.
type transcriptSpan struct {
	Start, End float64
	Text       string
}

// transcriptSpans are the result's segments, or — when the runner reports none (no
// pre-processing) — one span over the whole audio holding the whole text.
func transcriptSpans(res *runners.TranscriptionResult) []transcriptSpan {
	if len(res.Segments) == 0 {
		return []transcriptSpan{{Start: 0, End: res.Duration, Text: res.Text}}
	}
	out := make([]transcriptSpan, len(res.Segments))
	for i, s := range res.Segments {
		out[i] = transcriptSpan{Start: s.StartTime, End: s.EndTime, Text: s.Text}
	}
	return out
}

// verboseSegment is OpenAI's TranscriptionSegment. A segment the runner decoded (it reports
// the segment's tokens: the Whisper runner) carries the decoder's own figures: seek, tokens,
// temperature, avg_logprob, compression_ratio and no_speech_prob. A segment without them (the
// mock runner, which has no decoder) gets honest placeholders, never invented numbers:
//   - tokens: [];
//   - temperature: 0;
//   - avg_logprob, no_speech_prob: null (nothing measured them);
//   - compression_ratio: computed from the segment text as Whisper does (bytes / zlib bytes);
//   - seek: the segment's start in 10 ms mel frames (each VAD segment is its own window).
type verboseSegment struct {
	ID               int      `json:"id"`
	Seek             int      `json:"seek"`
	Start            float64  `json:"start"`
	End              float64  `json:"end"`
	Text             string   `json:"text"`
	Tokens           []int    `json:"tokens"`
	Temperature      float64  `json:"temperature"`
	AvgLogprob       *float64 `json:"avg_logprob"`
	CompressionRatio float64  `json:"compression_ratio"`
	NoSpeechProb     *float64 `json:"no_speech_prob"`
}

// durationUsage is OpenAI's usage for duration-billed models: whole seconds, rounded up.
type durationUsage struct {
	Type    string `json:"type"`
	Seconds int64  `json:"seconds"`
}

func usageOf(duration float64) *durationUsage {
	return &durationUsage{Type: "duration", Seconds: int64(math.Ceil(duration))}
}

// verboseTranscript is OpenAI's TranscriptionVerbose (and TranslationVerbose, which has no
// words and no usage).
type verboseTranscript struct {
	Task     string           `json:"task"`
	Language string           `json:"language"`
	Duration float64          `json:"duration"`
	Text     string           `json:"text"`
	Segments []verboseSegment `json:"segments,omitempty"`
	Usage    *durationUsage   `json:"usage,omitempty"`
}

// simpleTranscript is OpenAI's Transcription (response_format=json).
type simpleTranscript struct {
	Text  string         `json:"text"`
	Usage *durationUsage `json:"usage,omitempty"`
}

// verboseJSON builds verbose_json as OpenAI shapes it for the granularities asked for:
// segments unless only "word" was asked. It never has words: word timestamps need the
// decoder's cross-attention weights (openai/whisper aligns them by DTW), which the device
// program does not return, so the field is left out rather than filled with times that are
// not the words' (the handler says so in the X-Word-Timestamps header).
func verboseJSON(task string, res *runners.TranscriptionResult, segments bool) verboseTranscript {
	out := verboseTranscript{Task: task, Language: strings.ToLower(res.Language), Duration: res.Duration, Text: res.Text}
	if out.Language == "" || task == taskTranslate {
		out.Language = "english"
	}
	if task == taskTranscribe {
		out.Usage = usageOf(res.Duration)
	}
	if !segments {
		return out
	}
	segs := res.Segments
	if len(segs) == 0 { // no segments from the runner: one over the whole audio
		segs = []runners.TranscriptionSegment{{StartTime: 0, EndTime: res.Duration, Text: res.Text}}
	}
	for i, s := range segs {
		out.Segments = append(out.Segments, verboseSegmentOf(i, s))
	}
	return out
}

// verboseSegmentOf maps the runner's i-th segment: the decoder's figures when it has
// them (tokens reported), the placeholders of verboseSegment otherwise.
func verboseSegmentOf(i int, s runners.TranscriptionSegment) verboseSegment {
	if len(s.Tokens) > 0 {
		avg, noSpeech := s.AvgLogprob, s.NoSpeechProb
		text := s.Text
		if !strings.HasPrefix(text, " ") && text != "" {
			text = " " + text
		}
		return verboseSegment{
			ID: i, Seek: s.Seek, Start: s.StartTime, End: s.EndTime, Text: text,
			Tokens: s.Tokens, Temperature: s.Temperature, AvgLogprob: &avg,
			CompressionRatio: s.CompressionRatio, NoSpeechProb: &noSpeech,
		}
	}
	text := strings.TrimSpace(s.Text)
	return verboseSegment{
		ID: i, Seek: int(math.Round(s.StartTime * 100)), Start: s.StartTime, End: s.EndTime,
		Text: " " + text, Tokens: []int{}, CompressionRatio: whisper.CompressionRatio(text),
	}
}

// subtitleTimestamp formats seconds as HH:MM:SS<sep>mmm, rounding to the millisecond (SRT
// uses ',', WebVTT '.').
func subtitleTimestamp(sec float64, sep byte) string {
	ms := max(int64(math.Round(sec*1000)), 0)
	h := ms / 3_600_000
	ms -= h * 3_600_000
	m := ms / 60_000
	ms -= m * 60_000
	s := ms / 1000
	ms -= s * 1000
	return fmt.Sprintf("%02d:%02d:%02d%c%03d", h, m, s, sep, ms)
}

// cueText is a segment's text as a subtitle cue: trimmed, and without "-->", which would end
// the cue timing line early (Whisper's writers replace it the same way).
func cueText(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "-->", "->")
}

// formatSRT writes SubRip: cues numbered from 1, "HH:MM:SS,mmm --> HH:MM:SS,mmm", each cue
// followed by a blank line.
func formatSRT(spans []transcriptSpan) string {
	var b strings.Builder
	for i, sp := range spans {
		fmt.Fprintf(&b, "%d\n%s --> %s\n%s\n\n", i+1, subtitleTimestamp(sp.Start, ','), subtitleTimestamp(sp.End, ','), cueText(sp.Text))
	}
	return b.String()
}

// formatVTT writes WebVTT: the "WEBVTT" header and a blank line, then
// "HH:MM:SS.mmm --> HH:MM:SS.mmm" cues, each followed by a blank line.
func formatVTT(spans []transcriptSpan) string {
	var b strings.Builder
	b.WriteString("WEBVTT\n\n")
	for _, sp := range spans {
		fmt.Fprintf(&b, "%s --> %s\n%s\n\n", subtitleTimestamp(sp.Start, '.'), subtitleTimestamp(sp.End, '.'), cueText(sp.Text))
	}
	return b.String()
}

// formatText is response_format=text: the transcript and a newline.
func formatText(res *runners.TranscriptionResult) string {
	return res.Text + "\n"
}
