package simaudio

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
)

// tone is seconds of a 440 Hz sine of the given peak amplitude at 16 kHz.
func tone(seconds, amp float64) []float32 {
	n := int(seconds * 16000)
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(amp * math.Sin(2*math.Pi*440*float64(i)/16000))
	}
	return s
}

// speechAndSilence is 1 s of a 0.5-peak tone, 1 s of silence and 1 s of a 0.1-peak tone.
func speechAndSilence() []float32 {
	s := tone(1, 0.5)
	s = append(s, make([]float32, 16000)...)
	return append(s, tone(1, 0.1)...)
}

func transcribeOne(t *testing.T, r runners.Runner, task runners.Task) *runners.TranscriptionResult {
	t.Helper()
	if task.Ctx == nil {
		task.Ctx = context.Background()
	}
	out := r.Run(context.Background(), []runners.Task{task})
	require.Len(t, out, 1)
	require.NoError(t, out[0].Err)
	res, ok := out[0].Value.(*runners.TranscriptionResult)
	require.True(t, ok, "value is %T", out[0].Value)
	return res
}

func TestAudioWholeClip(t *testing.T) {
	r := New(simdev.Latency{})
	res := transcribeOne(t, r, runners.Task{Request: &runners.AudioRequest{Samples: tone(2, 0.5), SampleRate: 16000, Duration: 2}})
	// A sine of peak 0.5: peak -6.0 dBFS, RMS -9.0 dBFS.
	require.Equal(t, "[simulated transcription: 2.00 s of audio, peak -6.0 dBFS, RMS -9.0 dBFS]", res.Text)
	require.Equal(t, "transcribe", res.Task)
	require.Equal(t, "english", res.Language)
	require.Equal(t, 2.0, res.Duration)
	require.Nil(t, res.Segments)
	require.Nil(t, res.Speakers)
	require.Zero(t, res.SpeakerCount)

	silent := transcribeOne(t, r, runners.Task{Request: &runners.AudioRequest{Samples: make([]float32, 8000), SampleRate: 16000}})
	require.Equal(t, "[simulated transcription: 0.50 s of silence]", silent.Text)
	require.Equal(t, 0.5, silent.Duration, "duration from the samples when unset")
}

func TestAudioSegments(t *testing.T) {
	r := New(simdev.Latency{})
	req := &runners.AudioRequest{
		Samples: speechAndSilence(), SampleRate: 16000, Duration: 3,
		Segments: []runners.Span{{Start: 0.12345, End: 0.87654}, {Start: 1.2, End: 1.8}, {Start: 2.0, End: 3.0}},
	}
	res := transcribeOne(t, r, runners.Task{Request: req})
	want := []runners.TranscriptionSegment{
		{ID: 0, Speaker: "SPEAKER_00", StartTime: 0.123, EndTime: 0.877, Text: "[simulated transcription: 0.75 s of speech, peak -6.0 dBFS, RMS -9.0 dBFS]"},
		{ID: 1, Speaker: "SPEAKER_00", StartTime: 1.2, EndTime: 1.8, Text: "[simulated transcription: 0.60 s of silence]"},
		{ID: 2, Speaker: "SPEAKER_00", StartTime: 2, EndTime: 3, Text: "[simulated transcription: 1.00 s of speech, peak -20.0 dBFS, RMS -23.0 dBFS]"},
	}
	require.Equal(t, want, res.Segments)
	require.Equal(t, want[0].Text+" "+want[1].Text+" "+want[2].Text, res.Text)
	require.Equal(t, []string{"SPEAKER_00"}, res.Speakers)
	require.Equal(t, 1, res.SpeakerCount)
	require.Equal(t, 3.0, res.Duration)

	t.Run("empty segment list falls back to the whole audio", func(t *testing.T) {
		req := &runners.AudioRequest{Samples: tone(1, 0.5), SampleRate: 16000, Duration: 1, Segments: []runners.Span{}}
		res := transcribeOne(t, r, runners.Task{Request: req})
		require.Len(t, res.Segments, 1)
		require.Equal(t, runners.TranscriptionSegment{ID: 0, Speaker: "SPEAKER_00", StartTime: 0, EndTime: 1, Text: res.Text}, res.Segments[0])
	})
	t.Run("segments past the end of the samples", func(t *testing.T) {
		req := &runners.AudioRequest{Samples: tone(1, 0.5), SampleRate: 16000, Duration: 1, Segments: []runners.Span{{Start: 0.5, End: 7}, {Start: 8, End: 9}}}
		res := transcribeOne(t, r, runners.Task{Request: req})
		require.Len(t, res.Segments, 2)
		require.Contains(t, res.Segments[1].Text, "silence")
	})
}

// collector records streamed chunks; failAt > 0 makes the failAt-th Emit fail.
type collector struct {
	chunks []runners.TranscriptChunk
	times  []time.Time
	failAt int
	err    error
}

func (c *collector) emit(chunk runners.Chunk) error {
	tc, ok := chunk.(runners.TranscriptChunk)
	if !ok {
		return errors.New("unexpected chunk type")
	}
	c.chunks = append(c.chunks, tc)
	c.times = append(c.times, time.Now())
	if len(c.chunks) == c.failAt {
		return c.err
	}
	return nil
}

func TestAudioStreaming(t *testing.T) {
	t.Run("segments", func(t *testing.T) {
		r := New(simdev.Latency{})
		var c collector
		req := &runners.AudioRequest{Samples: speechAndSilence(), SampleRate: 16000, Duration: 3, Stream: true,
			Segments: []runners.Span{{Start: 0, End: 1}, {Start: 2, End: 3}}}
		res := transcribeOne(t, r, runners.Task{Request: req, Emit: c.emit})
		words := strings.Fields(res.Text)
		require.Len(t, c.chunks, len(words))
		first := len(strings.Fields(res.Segments[0].Text))
		for i, ch := range c.chunks {
			require.Equal(t, i+1, ch.ChunkID)
			want := words[i]
			if i == 0 || i == first {
				want = "[SPEAKER_00] " + want
			}
			require.Equal(t, want, ch.Text, "chunk %d", i+1)
		}
		require.Len(t, res.Segments, 2)
	})
	t.Run("no segments, no prefix", func(t *testing.T) {
		r := New(simdev.Latency{})
		var c collector
		res := transcribeOne(t, r, runners.Task{Request: &runners.AudioRequest{Samples: tone(1, 0.25), SampleRate: 16000, Duration: 1, Stream: true}, Emit: c.emit})
		texts := make([]string, len(c.chunks))
		for i, ch := range c.chunks {
			texts[i] = ch.Text
			require.Equal(t, i+1, ch.ChunkID)
		}
		require.Equal(t, res.Text, strings.Join(texts, " "))
		require.Equal(t, "[simulated", texts[0])
	})
	t.Run("latency is paced across chunks", func(t *testing.T) {
		r := New(simdev.Latency{PerAudioSec: 100 * time.Millisecond})
		var c collector
		start := time.Now()
		transcribeOne(t, r, runners.Task{Request: &runners.AudioRequest{Samples: tone(2, 0.5), SampleRate: 16000, Duration: 2, Stream: true}, Emit: c.emit})
		total := time.Since(start)
		require.GreaterOrEqual(t, total, 200*time.Millisecond)
		// Paced, not all at the end: the chunks are spread over most of the latency. (Sleeps
		// are minimums, so this holds however loaded the machine is.)
		require.GreaterOrEqual(t, c.times[len(c.times)-1].Sub(c.times[0]), 100*time.Millisecond, "chunks spread over the latency")
	})
	t.Run("emit error stops the task", func(t *testing.T) {
		r := New(simdev.Latency{})
		gone := errors.New("client gone")
		c := collector{failAt: 3, err: gone}
		out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: &runners.AudioRequest{Samples: tone(1, 0.5), SampleRate: 16000, Duration: 1, Stream: true}, Emit: c.emit}})
		require.ErrorIs(t, out[0].Err, gone)
		require.Nil(t, out[0].Value)
		require.Len(t, c.chunks, 3)
	})
	t.Run("cancel mid-stream", func(t *testing.T) {
		r := New(simdev.Latency{PerAudioSec: time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		var c collector
		emit := func(chunk runners.Chunk) error {
			cancel()
			return c.emit(chunk)
		}
		start := time.Now()
		out := r.Run(context.Background(), []runners.Task{{Ctx: ctx, Request: &runners.AudioRequest{Samples: tone(2, 0.5), SampleRate: 16000, Duration: 2, Stream: true}, Emit: emit}})
		require.ErrorIs(t, out[0].Err, context.Canceled)
		require.Len(t, c.chunks, 1)
		require.Less(t, time.Since(start), time.Second)
	})
}

func TestAudioLatencyAndLifecycle(t *testing.T) {
	r := New(simdev.Latency{Warmup: 20 * time.Millisecond, PerAudioSec: 50 * time.Millisecond})
	start := time.Now()
	require.NoError(t, r.Warmup(context.Background()))
	require.GreaterOrEqual(t, time.Since(start), 70*time.Millisecond, "warm-up sleeps, then transcribes 1 s")

	start = time.Now()
	req := &runners.AudioRequest{Samples: tone(2, 0.5), SampleRate: 16000, Duration: 2, Segments: []runners.Span{{Start: 0, End: 0.5}, {Start: 1, End: 2}}}
	transcribeOne(t, r, runners.Task{Request: req})
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	out := r.Run(context.Background(), []runners.Task{
		{Ctx: ctx, Request: &runners.AudioRequest{Samples: tone(2, 0.5), SampleRate: 16000, Duration: 2}},
		{Ctx: context.Background(), Request: &runners.AudioRequest{Samples: tone(0.2, 0.5), SampleRate: 16000, Duration: 0.2}},
		{Ctx: context.Background(), Request: &runners.ImageRequest{}},
	})
	require.ErrorIs(t, out[0].Err, context.DeadlineExceeded)
	require.NoError(t, out[1].Err)
	require.Error(t, out[2].Err)

	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	require.ErrorIs(t, r.Warmup(context.Background()), simdev.ErrClosed)
	require.ErrorIs(t, r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: req}})[0].Err, simdev.ErrClosed)
}
