package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/fanout"
)

// fanoutSecondsPerSecond is the mock Whisper device time per second of audio in the fan-out
// timing: a 3-minute file is several seconds of device time on one worker, large against the
// upload, decoding and VAD overhead that fan-out does not speed up.
const fanoutSecondsPerSecond = "0.025"

// speechLike is 3 minutes of 16 kHz mono: "phrases" of 1.5-6 s (each an amplitude-modulated
// tone with its own pitch and level, modulated at a syllable rate of ~4 Hz) separated by
// pauses of 0.4-1.4 s, from a fixed seed. The server's VAD finds each phrase.
func speechLike() []int16 {
	const rate, total = 16000, 180.0
	rng := rand.New(rand.NewPCG(7, 11))
	var out []int16
	for float64(len(out))/rate < total-8 {
		phrase := 1.5 + 4.5*rng.Float64()
		freq := 120 + 180*rng.Float64()
		amp := 0.15 + 0.35*rng.Float64()
		n := int(phrase * rate)
		for i := range n {
			tt := float64(i) / rate
			env := 0.65 + 0.35*math.Sin(2*math.Pi*4*tt)
			out = append(out, int16(math.Round(32767*amp*env*math.Sin(2*math.Pi*freq*tt))))
		}
		out = append(out, silence(rate, 0.4+rng.Float64())...)
	}
	return append(out, silence(rate, total-float64(len(out))/rate)...)
}

// fanoutResult is the part of a transcription the comparison needs.
type fanoutResult struct {
	Text     string  `json:"text"`
	Duration float64 `json:"duration"`
	Segments []struct {
		ID        int     `json:"id"`
		StartTime float64 `json:"start_time"`
		EndTime   float64 `json:"end_time"`
		Text      string  `json:"text"`
	} `json:"segments"`
}

// waitAllWorkers waits until every worker of s is warm, so a timing run uses all of them.
func waitAllWorkers(t *testing.T, s *server, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		info := workerInfo(t, s)
		ready := 0
		for _, w := range info {
			if w["is_ready"] == true {
				ready++
			}
		}
		return len(info) == n && ready == n
	}, 15*time.Second, 20*time.Millisecond)
}

// transcribeTimed posts wav to /audio/transcriptions (pre-processing on, no streaming) and
// returns the result, the X-Transcription-Chunks header and the wall time.
func transcribeTimed(t *testing.T, s *server, wav []byte) (fanoutResult, string, time.Duration) {
	t.Helper()
	start := time.Now()
	r := s.postMultipart(t, audioPath, file("long.wav", "audio/wav", wav), field("is_preprocessing_enabled", "true"))
	took := time.Since(start)
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	t.Logf("%s: %v wall, X-Transcription-Chunks %s, X-Device-Time-Ms %s (summed over the chunks), X-Queue-Time-Ms %s",
		s.URL, took.Round(time.Millisecond), r.Header.Get("X-Transcription-Chunks"), r.Header.Get("X-Device-Time-Ms"), r.Header.Get("X-Queue-Time-Ms"))
	var res fanoutResult
	r.JSON(t, &res)
	return res, r.Header.Get("X-Transcription-Chunks"), took
}

// chunkSeconds are the chunk lengths the server makes from these segments for a pool of
// workers (the package's own Split over the answer's segments, which are the VAD's).
func chunkSeconds(res fanoutResult, workers int) []float64 {
	req := &runners.AudioRequest{SampleRate: 16000, Duration: res.Duration, Samples: make([]float32, int(res.Duration*16000))}
	for _, s := range res.Segments {
		req.Segments = append(req.Segments, runners.Span{Start: s.StartTime, End: s.EndTime})
	}
	var out []float64
	for _, c := range fanout.Split(req, 0, workers).Chunks {
		out = append(out, c.Req.Duration)
	}
	return out
}

// makespan is when the last of the chunks ends when each is taken, in order, by the first
// free of the workers (device time proportional to length).
func makespan(chunks []float64, workers int) float64 {
	free := make([]float64, workers)
	for _, c := range chunks {
		sort.Float64s(free)
		free[0] += c
	}
	sort.Float64s(free)
	return free[workers-1]
}

// TestAudioFanoutFourWorkers is the fan-out must-show: a 3-minute file transcribed on four
// simulated Whisper workers takes about a quarter of the time it takes on one, and both
// answer the same merged text and segments, which are also what one job (fan-out off)
// answers. Run alone (not parallel) so that the two timings see the same machine.
func TestAudioFanoutFourWorkers(t *testing.T) {
	wav := wavPCM16(16000, speechLike())
	base := map[string]string{
		"MODEL_RUNNER": "tt-whisper", "MOCK_AUDIO_SECONDS_PER_SECOND": fanoutSecondsPerSecond,
		"MAX_AUDIO_DURATION_WITH_PREPROCESSING_SECONDS": "300", "DEFAULT_INFERENCE_TIMEOUT_SECONDS": "120",
	}
	with := func(kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}

	one := startServer(t, with("MOCK_DEVICES_COUNT", "1", "DEVICE_IDS", "(0)"))
	res1, chunks1, took1 := transcribeTimed(t, one, wav)
	one.stopAndCheck(t)

	four := startServer(t, with("MOCK_DEVICES_COUNT", "4", "DEVICE_IDS", "(0),(1),(2),(3)"))
	waitAllWorkers(t, four, 4)
	res4, chunks4, took4 := transcribeTimed(t, four, wav)

	n1, err := strconv.Atoi(chunks1)
	require.NoError(t, err)
	n4, err := strconv.Atoi(chunks4)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n1, 6, "180 s of speech makes at least six chunks of at most 30 s")
	require.GreaterOrEqual(t, n4, n1, "four workers get balanced chunks, at least as many")

	// Same merged answer on one worker and on four.
	require.InDelta(t, 180.0, res4.Duration, 1e-3)
	require.Equal(t, res1, res4)
	require.Greater(t, len(res4.Segments), 30)
	for i, s := range res4.Segments {
		require.Equal(t, i, s.ID)
		require.Less(t, s.StartTime, s.EndTime)
		if i > 0 {
			require.GreaterOrEqual(t, s.StartTime, res4.Segments[i-1].EndTime, "segments in file order")
		}
	}
	require.LessOrEqual(t, res4.Segments[len(res4.Segments)-1].EndTime, 180.0)

	// The ideal ratio for these chunks: device time proportional to chunk length.
	c1, c4 := chunkSeconds(res1, 1), chunkSeconds(res4, 4)
	require.Len(t, c1, n1)
	require.Len(t, c4, n4)
	ideal := makespan(c4, 4) / makespan(c1, 1)

	ratio := took4.Seconds() / took1.Seconds()
	t.Logf("fan-out of a 180 s file: 1 worker %d chunks in %v, 4 workers %d chunks in %v: ratio %.3f (ideal for these chunks %.3f; MOCK_AUDIO_SECONDS_PER_SECOND=%s)",
		n1, took1.Round(time.Millisecond), n4, took4.Round(time.Millisecond), ratio, ideal, fanoutSecondsPerSecond)
	require.Lessf(t, ratio, 0.6, "four workers took %v, one took %v", took4, took1)

	// Streaming on four workers (OpenAI SSE, fast device): deltas in order, the same text.
	four.stopAndCheck(t)
	fast := startServer(t, with("MOCK_DEVICES_COUNT", "4", "DEVICE_IDS", "(0),(1),(2),(3)", "MOCK_AUDIO_SECONDS_PER_SECOND", "0.001"))
	ct, body := multipartBody(t, file("long.wav", "audio/wav", wav), field("model", "whisper-1"), field("stream", "true"))
	req, err := http.NewRequest(http.MethodPost, fast.URL+"/v1/audio/transcriptions", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", bearer)
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var deltas []string
	var done map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev))
		switch ev["type"] {
		case "transcript.text.delta":
			deltas = append(deltas, ev["delta"].(string))
		case "transcript.text.done":
			done = ev
		default:
			t.Fatalf("unexpected event %s", line)
		}
	}
	require.NoError(t, sc.Err())
	require.NotNil(t, done)
	require.Equal(t, res4.Text, done["text"])
	require.Equal(t, res4.Text, strings.Join(deltas, ""), "the deltas, in order, are the text")

	require.NotEmpty(t, resp.Header.Get("X-Transcription-Chunks"))
	require.NotEqual(t, "1", resp.Header.Get("X-Transcription-Chunks"))

	// Fan-out off: one job gives the same answer.
	fast.stopAndCheck(t)
	off := startServer(t, with("MOCK_DEVICES_COUNT", "4", "DEVICE_IDS", "(0),(1),(2),(3)", "ALLOW_AUDIO_FANOUT", "false",
		"MOCK_AUDIO_SECONDS_PER_SECOND", "0.001"))
	res, chunks, _ := transcribeTimed(t, off, wav)
	require.Equal(t, "1", chunks)
	require.Equal(t, res4, res)
}
