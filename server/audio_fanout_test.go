package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/internal/wavtest"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/simaudio"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// testChunkSeconds is the chunk bound of the fan-out tests (30 s in production): short
// audio keeps the tests fast under -race, where decoding and VAD dominate.
const testChunkSeconds = 4

// burstsWAV is 16 kHz 16-bit mono: 8 tone bursts of 1 s (each its own pitch and level)
// with 0.5 s pauses, 12 s in all, so pre-processing finds 8 speech segments that make four
// chunks of at most testChunkSeconds.
func burstsWAV() []byte {
	const rate = 16000
	var pcm []int16
	for b := range 8 {
		freq, amp := 200+37*float64(b), 4000+900*float64(b%5)
		for i := range rate {
			pcm = append(pcm, int16(amp*math.Sin(2*math.Pi*freq*float64(i)/rate)))
		}
		pcm = append(pcm, make([]int16, rate/2)...)
	}
	return wavtest.PCM16(rate, pcm)
}

func fanoutSettings(fanout bool) *config.Settings {
	s := testSettings()
	s.ModelRunner = "tt-whisper"
	s.AllowAudioFanout = fanout
	return s
}

// fanoutServer serves audio with sched, chunking at testChunkSeconds.
func fanoutServer(settings *config.Settings, sched Scheduler) http.Handler {
	s := New(Deps{Settings: settings, Service: runners.ServiceAudio, Sched: sched})
	s.fanoutChunkSeconds = testChunkSeconds
	return s.Handler()
}

// mockWhisper is the real scheduler over three in-process mock Whisper runners without latency.
func mockWhisper(t *testing.T) *scheduler.Scheduler {
	t.Helper()
	groups := []config.DeviceGroup{{ID: "0", Devices: []int{0}}, {ID: "1", Devices: []int{1}}, {ID: "2", Devices: []int{2}}}
	s := scheduler.New(scheduler.Config{Groups: groups, QueueSize: 32, MaxBatchSize: 1, Timeout: time.Minute},
		func(config.DeviceGroup) (runners.Runner, error) { return simaudio.New(simdev.Latency{}), nil })
	s.Start(context.Background())
	t.Cleanup(func() { require.NoError(t, s.Stop(context.Background())) })
	require.Eventually(t, s.Ready, 10*time.Second, time.Millisecond)
	return s
}

func audioJSON(t *testing.T, wav []byte, stream bool) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"file": base64.StdEncoding.EncodeToString(wav), "stream": stream})
	require.NoError(t, err)
	return b
}

// TestAudioFanoutMatchesOneJob: the fanned-out answer (four chunks on three workers) is the
// one-job answer, on both route families, streamed or not.
func TestAudioFanoutMatchesOneJob(t *testing.T) {
	sched := mockWhisper(t)
	wav := burstsWAV()
	one := fanoutServer(fanoutSettings(false), sched)
	fan := fanoutServer(fanoutSettings(true), sched)

	t.Run("legacy json", func(t *testing.T) {
		body := audioJSON(t, wav, false)
		a := do(one, "POST", "/audio/transcriptions", "application/json", "Bearer k", body)
		b := do(fan, "POST", "/audio/transcriptions", "application/json", "Bearer k", body)
		require.Equal(t, http.StatusOK, a.Code, a.Body.String())
		require.Equal(t, http.StatusOK, b.Code, b.Body.String())
		require.Equal(t, "1", a.Header().Get(chunksHeader))
		require.Equal(t, "4", b.Header().Get(chunksHeader))
		var ra, rb runners.TranscriptionResult
		require.NoError(t, json.Unmarshal(a.Body.Bytes(), &ra))
		require.NoError(t, json.Unmarshal(b.Body.Bytes(), &rb))
		require.Len(t, ra.Segments, 8)
		require.Equal(t, ra, rb)
	})
	t.Run("legacy ndjson", func(t *testing.T) {
		body := audioJSON(t, wav, true)
		a := do(one, "POST", "/audio/transcriptions", "application/json", "Bearer k", body)
		b := do(fan, "POST", "/audio/transcriptions", "application/json", "Bearer k", body)
		require.Equal(t, http.StatusOK, b.Code, b.Body.String())
		require.Equal(t, "application/x-ndjson", b.Header().Get("Content-Type"))
		require.Equal(t, "4", b.Header().Get(chunksHeader))
		// Every line, chunk ids included (renumbered across the chunks), is the one-job line.
		require.Equal(t, a.Body.String(), b.Body.String())
		lines := strings.Split(strings.TrimSpace(b.Body.String()), "\n")
		require.Greater(t, len(lines), 8*5)
		require.Contains(t, lines[len(lines)-1], `"segments"`)
	})
	t.Run("v1 verbose_json", func(t *testing.T) {
		ct, body := multipartBody(t, wav, "model", "whisper-1", "response_format", "verbose_json", "chunking_strategy", "auto")
		a := do(one, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
		b := do(fan, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
		require.Equal(t, http.StatusOK, b.Code, b.Body.String())
		require.Equal(t, "4", b.Header().Get(chunksHeader))
		require.JSONEq(t, a.Body.String(), b.Body.String())
	})
	t.Run("v1 sse", func(t *testing.T) {
		ct, body := multipartBody(t, wav, "model", "whisper-1", "stream", "true")
		a := do(one, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
		b := do(fan, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
		require.Equal(t, http.StatusOK, b.Code, b.Body.String())
		require.Equal(t, "text/event-stream; charset=utf-8", b.Header().Get("Content-Type"))
		require.Equal(t, a.Body.String(), b.Body.String())
		require.Contains(t, b.Body.String(), `"type":"transcript.text.done"`)
	})
	t.Run("short audio is one job", func(t *testing.T) {
		b := do(fan, "POST", "/audio/transcriptions", "application/json", "Bearer k", audioJSON(t, testWAV(16000, 48000), false))
		require.Equal(t, http.StatusOK, b.Code, b.Body.String())
		require.Equal(t, "1", b.Header().Get(chunksHeader))
	})
	t.Run("no pre-processing is one job", func(t *testing.T) {
		ct, body := multipartBody(t, wav, "model", "whisper-1", "is_preprocessing_enabled", "false")
		h := fanoutServer(fanoutSettings(true), sched)
		b := do(h, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
		require.Equal(t, http.StatusOK, b.Code, b.Body.String())
		require.Equal(t, "1", b.Header().Get(chunksHeader))
	})
}

// failingChunks is a scheduler seam for fan-out failures: the first job called succeeds
// (streaming one chunk), the second fails, the others wait for their cancellation. calls
// counts the jobs submitted.
func failingChunks(cancelled, calls *atomic.Int64) *fakeSched {
	return &fakeSched{ready: true, submit: func(ctx context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		switch calls.Add(1) {
		case 1:
			if emit != nil {
				if err := emit(runners.TranscriptChunk{Text: "early", ChunkID: 1}); err != nil {
					return nil, err
				}
			}
			return &runners.TranscriptionResult{Text: "early", Task: "transcribe", Language: "english"}, nil
		case 2:
			return nil, errors.New("decoder exploded")
		default:
			<-ctx.Done()
			cancelled.Add(1)
			return nil, context.Cause(ctx)
		}
	}}
}

// allInFlight is fan-out on with all four chunks in flight at once: the fake scheduler has
// one worker, and MAX_BATCH_SIZE 4 lets it take four chunk jobs.
func allInFlight() *config.Settings {
	s := fanoutSettings(true)
	s.MaxBatchSize = 4
	return s
}

func TestAudioFanoutOneChunkFails(t *testing.T) {
	wav := burstsWAV()
	t.Run("one in flight: later chunks are never submitted", func(t *testing.T) {
		var cancelled, calls atomic.Int64
		h := fanoutServer(fanoutSettings(true), failingChunks(&cancelled, &calls))
		w := do(h, "POST", "/audio/transcriptions", "application/json", "Bearer k", audioJSON(t, wav, false))
		require.Equal(t, http.StatusInternalServerError, w.Code)
		require.Contains(t, w.Body.String(), "chunk 2 of 4")
		require.Equal(t, int64(2), calls.Load())
		require.Zero(t, cancelled.Load())
	})
	t.Run("json", func(t *testing.T) {
		var cancelled, calls atomic.Int64
		h := fanoutServer(allInFlight(), failingChunks(&cancelled, &calls))
		w := do(h, "POST", "/audio/transcriptions", "application/json", "Bearer k", audioJSON(t, wav, false))
		require.Equal(t, http.StatusInternalServerError, w.Code)
		var body map[string]string
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
		require.Contains(t, body["detail"], "decoder exploded")
		require.Regexp(t, `chunk [1-4] of 4`, body["detail"])
		require.Equal(t, calls.Load()-2, cancelled.Load(), "the rest were cancelled or never submitted")
	})
	t.Run("ndjson", func(t *testing.T) {
		var cancelled, calls atomic.Int64
		h := fanoutServer(allInFlight(), failingChunks(&cancelled, &calls))
		w := do(h, "POST", "/audio/transcriptions", "application/json", "Bearer k", audioJSON(t, wav, true))
		require.Equal(t, calls.Load()-2, cancelled.Load(), "the rest were cancelled or never submitted")
		// Whether the chunk that succeeded was relayed first depends on which chunk it was;
		// either way the request ends in exactly one error and never in a result.
		if w.Code != http.StatusOK {
			require.Equal(t, http.StatusInternalServerError, w.Code)
			require.Contains(t, w.Body.String(), "decoder exploded")
			return
		}
		lines := strings.Split(strings.TrimSpace(w.Body.String()), "\n")
		last := map[string]any{}
		require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
		require.Equal(t, 500.0, last["status_code"])
		require.Contains(t, last["detail"], "decoder exploded")
		for _, l := range lines[:len(lines)-1] {
			require.Equal(t, `{"text": "early", "chunk_id": 1}`, l)
		}
	})
	t.Run("sse", func(t *testing.T) {
		var cancelled, calls atomic.Int64
		h := fanoutServer(allInFlight(), failingChunks(&cancelled, &calls))
		ct, body := multipartBody(t, wav, "model", "whisper-1", "stream", "true")
		w := do(h, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
		require.Equal(t, calls.Load()-2, cancelled.Load(), "the rest were cancelled or never submitted")
		require.Contains(t, w.Body.String(), "decoder exploded")
		require.NotContains(t, w.Body.String(), "transcript.text.done")
		require.Equal(t, 1, strings.Count(w.Body.String(), "decoder exploded"), "one error, answered once")
	})
}

// TestAudioFanoutChunkRefused: a chunk the queue refuses fails the request with the
// refusal's status and Retry-After, as a one-job request would.
func TestAudioFanoutChunkRefused(t *testing.T) {
	var calls atomic.Int64
	f := &fakeSched{ready: true, submit: func(ctx context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		if calls.Add(1) == 3 {
			return nil, &scheduler.Rejection{Err: scheduler.ErrQueueFull, RetryAfter: 3 * time.Second}
		}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}}
	h := fanoutServer(allInFlight(), f)
	w := do(h, "POST", "/audio/transcriptions", "application/json", "Bearer k", audioJSON(t, burstsWAV(), false))
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	require.Equal(t, "3", w.Header().Get("Retry-After"))
	require.GreaterOrEqual(t, calls.Load(), int64(3)) // the fourth may be cancelled before its submit
}

// TestAudioFanoutTimeout: DEFAULT_INFERENCE_TIMEOUT_SECONDS bounds the whole fanned-out
// request, not each chunk from its own (later) submission.
func TestAudioFanoutTimeout(t *testing.T) {
	var calls atomic.Int64
	f := &fakeSched{ready: true, submit: func(ctx context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		calls.Add(1)
		select {
		case <-time.After(150 * time.Millisecond): // each chunk alone is well within the timeout
			return &runners.TranscriptionResult{Text: "x"}, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}}
	settings := fanoutSettings(true) // one chunk in flight: four chunks take 600 ms
	settings.InferenceTimeout = 350 * time.Millisecond
	start := time.Now()
	w := do(fanoutServer(settings, f), "POST", "/audio/transcriptions", "application/json", "Bearer k", audioJSON(t, burstsWAV(), false))
	require.Equal(t, http.StatusGatewayTimeout, w.Code, w.Body.String())
	require.Contains(t, w.Body.String(), "inference timed out after 350ms")
	require.Less(t, calls.Load(), int64(4))
	require.Less(t, time.Since(start), 10*time.Second)
}

func TestOpenAIAudioDecodingOptionsReachTheRunner(t *testing.T) {
	wav := testWAV(16000, 16000)
	tests := []struct {
		name   string
		path   string
		fields []string
		want   runners.AudioRequest
	}{
		{name: "defaults", path: "/v1/audio/transcriptions", fields: []string{"model", "whisper-1"},
			want: runners.AudioRequest{Task: "transcribe"}},
		{name: "all set", path: "/v1/audio/transcriptions",
			fields: []string{"model", "whisper-1", "language", "German", "prompt", "Kafka, Prag", "temperature", "0.4"},
			want:   runners.AudioRequest{Task: "transcribe", Language: "de", Prompt: "Kafka, Prag", Temperature: 0.4}},
		{name: "translation", path: "/v1/audio/translations",
			fields: []string{"model", "whisper-1", "language", "fr", "prompt", "p", "temperature", "0.2"},
			want:   runners.AudioRequest{Task: "translate", Language: "fr", Prompt: "p", Temperature: 0.2}}, // the source language, as Whisper takes it
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := audioFake(&runners.TranscriptionResult{Text: "x", Task: "transcribe", Language: "english"})
			h := newOpenAIServer(runners.ServiceAudio, "tt-whisper", f)
			ct, body := multipartBody(t, wav, tc.fields...)
			w := do(h, "POST", tc.path, ct, "Bearer k", body)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			got := f.last.(*runners.AudioRequest)
			require.Equal(t, tc.want.Task, got.Task)
			require.Equal(t, tc.want.Language, got.Language)
			require.Equal(t, tc.want.Prompt, got.Prompt)
			require.Equal(t, tc.want.Temperature, got.Temperature)
		})
	}
}

func TestOpenAIChunkingStrategy(t *testing.T) {
	wav := testWAV(16000, 16000)
	tests := []struct {
		name     string
		fields   []string
		status   int
		segments bool // the runner got speech segments (pre-processing ran)
	}{
		{name: "default: pre-processing on", fields: nil, status: 200, segments: true},
		{name: "off", fields: []string{"is_preprocessing_enabled", "false"}, status: 200},
		{name: "auto", fields: []string{"chunking_strategy", "auto"}, status: 200, segments: true},
		{name: "server_vad", fields: []string{"chunking_strategy[type]", "server_vad"}, status: 200, segments: true},
		{name: "server_vad with its numbers", fields: []string{"chunking_strategy[type]", "server_vad", "chunking_strategy[silence_duration_ms]", "500"}, status: 400},
		{name: "auto with pre-processing on", fields: []string{"is_preprocessing_enabled", "true", "chunking_strategy", "auto"}, status: 200, segments: true},
		{name: "auto but pre-processing off", fields: []string{"chunking_strategy", "auto", "is_preprocessing_enabled", "false"}, status: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := audioFake(&runners.TranscriptionResult{Text: "x", Task: "transcribe", Language: "english"})
			h := newOpenAIServer(runners.ServiceAudio, "tt-whisper", f)
			ct, body := multipartBody(t, wav, append([]string{"model", "whisper-1"}, tc.fields...)...)
			w := do(h, "POST", "/v1/audio/transcriptions", ct, "Bearer k", body)
			require.Equal(t, tc.status, w.Code, w.Body.String())
			if tc.status != 200 {
				requireEnvelope(t, w.Body.Bytes(), "invalid_request_error", "chunking_strategy", nil)
				return
			}
			require.Equal(t, tc.segments, f.last.(*runners.AudioRequest).Segments != nil)
		})
	}
}

func TestTranslationByATranslatingRunner(t *testing.T) {
	// A runner that translates says so; the source language is then no reason for a 501.
	res := &runners.TranscriptionResult{Text: "Hello.", Task: "translate", Language: "german", Duration: 1}
	h := newOpenAIServer(runners.ServiceAudio, "tt-whisper", audioFake(res))
	ct, body := multipartBody(t, testWAV(16000, 16000), "model", "whisper-1")
	w := do(h, "POST", "/v1/audio/translations", ct, "Bearer k", body)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.JSONEq(t, `{"text":"Hello."}`, w.Body.String())
}

func TestVerboseSegmentDecoderFields(t *testing.T) {
	tests := []struct {
		name string
		seg  runners.TranscriptionSegment
		want string // the segment's verbose_json
	}{
		{
			name: "decoded by the Whisper runner: its figures",
			seg: runners.TranscriptionSegment{StartTime: 31.5, EndTime: 33.25, Text: " Hello there.", Seek: 3000,
				Tokens: []int{50365, 2425, 456, 13, 50440}, Temperature: 0.2, AvgLogprob: -0.25, CompressionRatio: 1.5, NoSpeechProb: 0.0125},
			want: `{"id":4,"seek":3000,"start":31.5,"end":33.25,"text":" Hello there.","tokens":[50365,2425,456,13,50440],` +
				`"temperature":0.2,"avg_logprob":-0.25,"compression_ratio":1.5,"no_speech_prob":0.0125}`,
		},
		{
			name: "decoded, zero figures stay numbers",
			seg:  runners.TranscriptionSegment{StartTime: 0, EndTime: 1, Text: "Hi", Tokens: []int{1}},
			want: `{"id":4,"seek":0,"start":0,"end":1,"text":" Hi","tokens":[1],"temperature":0,"avg_logprob":0,"compression_ratio":0,"no_speech_prob":0}`,
		},
		{
			name: "no decoder (mock): placeholders",
			seg:  runners.TranscriptionSegment{StartTime: 3.32, EndTime: 8.47, Text: "People were swimming --> in the ocean."},
			want: `{"id":4,"seek":332,"start":3.32,"end":8.47,"text":" People were swimming --> in the ocean.","tokens":[],` +
				`"temperature":0,"avg_logprob":null,"compression_ratio":0.8260869565217391,"no_speech_prob":null}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			require.NoError(t, enc.Encode(verboseSegmentOf(4, tc.seg)))
			require.Equal(t, tc.want, strings.TrimSpace(b.String()))
		})
	}
	v := verboseJSON(taskTranscribe, &runners.TranscriptionResult{Duration: 40, Text: "Hello there.", Segments: []runners.TranscriptionSegment{tests[0].seg}}, true)
	require.Equal(t, -0.25, *v.Segments[0].AvgLogprob)
}
