package tests

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The real Whisper runner (runners/whisper/whisperrunner) on the C simulator, through the binary:
// MODEL_RUNNER=tt-whisper with the vocabulary of ../shared/testdata/whisper in
// MODEL_WEIGHTS_PATH, so the runner loads the encoder and the traced decoder-step programs and
// decodes with openai/whisper's loop. Unscripted (no TTB_SIM_SCRIPT), every window the sim
// decodes says " This is simulated speech number N." (N from a hash of the encoder states, so
// the same audio window always gives the same N) between <|0.00|> and <|2.00|>, with per-token
// log probability -0.05 and P(<|nospeech|>) 0.01 (ttnn/README.md, "Scripted Whisper decoding").

// simSentence is one unscripted sim decode's text.
var simSentence = regexp.MustCompile(`^This is simulated speech number (one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\.$`)

// realWhisperFanoutLatency is MOCK_AUDIO_SECONDS_PER_SECOND for the real runner's fan-out
// timing. The runner maps it onto the simulator's latency scale (runner.configFor): 0.0125
// gives a scale of about 0.37, so a window costs about 57 ms of encoder and 3.5 ms per
// decoder step. Each VAD phrase of speechLike is one window of ~20 decoder steps (sot
// sequence, language detection on a chunk's first phrase, the sentence, timestamps): about
// 0.16 s of device time, about 6 s for the 3-minute file's 37 phrases on one worker (measured
// 5.9 s; 4 workers 2.1-2.4 s). Twice that, 0.025, keeps the device time large against the host
// work (decoding, VAD, log-mel) that fan-out does not parallelise when the machine is busy:
// at 0.0125, with the test pinned to one core shared with a busy loop, 4 workers took 0.72 of
// the one-worker time; at 0.025, 0.51-0.53 (1 worker 13-14 s, 4 workers 7 s).
const realWhisperFanoutLatency = "0.025"

// realWhisperEnv is the environment of a server whose tt-whisper workers run the real runner
// on the simulator, or skips the test when the shared vocabulary is absent.
func realWhisperEnv(t *testing.T, kv ...string) map[string]string {
	t.Helper()
	dir := testdataDir(t, "whisper")
	if _, err := os.Stat(filepath.Join(dir, "multilingual.tiktoken")); err != nil {
		t.Skipf("the whisper vocabulary multilingual.tiktoken is absent from %s (%v); the real Whisper runner cannot serve, skipping", dir, err)
	}
	env := map[string]string{
		"MODEL_RUNNER":       "tt-whisper",
		"MODEL_WEIGHTS_PATH": dir,
		"MAX_AUDIO_DURATION_WITH_PREPROCESSING_SECONDS": "300",
		"DEFAULT_INFERENCE_TIMEOUT_SECONDS":             "180",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return env
}

// waitWorkersWarm waits until n workers are warm (the real runner's warm-up loads and traces
// the programs and transcribes a second of silence, slower than the mock's).
func waitWorkersWarm(t *testing.T, s *server, n int) {
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
	}, 60*time.Second, 20*time.Millisecond, "%d warm workers", n)
}

// verboseSeg is a /v1 verbose_json segment; the statistics are pointers so that null (the
// mock runner's "nothing measured") is told apart from a number.
type verboseSeg struct {
	ID               int      `json:"id"`
	Seek             int      `json:"seek"`
	Start            float64  `json:"start"`
	End              float64  `json:"end"`
	Text             string   `json:"text"`
	Tokens           []int    `json:"tokens"`
	Temperature      *float64 `json:"temperature"`
	AvgLogprob       *float64 `json:"avg_logprob"`
	CompressionRatio *float64 `json:"compression_ratio"`
	NoSpeechProb     *float64 `json:"no_speech_prob"`
}

type verboseResult struct {
	Task     string       `json:"task"`
	Language string       `json:"language"`
	Duration float64      `json:"duration"`
	Text     string       `json:"text"`
	Segments []verboseSeg `json:"segments"`
}

// transcribeVerbose posts wav to /v1/audio/transcriptions as verbose_json (VAD
// pre-processing is that route's default) and returns the answer, X-Transcription-Chunks and
// the wall time.
func transcribeVerbose(t *testing.T, s *server, wav []byte) (verboseResult, int, time.Duration) {
	t.Helper()
	start := time.Now()
	r := s.postMultipart(t, "/v1/audio/transcriptions", file("speech.wav", "audio/wav", wav),
		field("model", "whisper-1"), field("response_format", "verbose_json"))
	took := time.Since(start)
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	chunks, err := strconv.Atoi(r.Header.Get("X-Transcription-Chunks"))
	require.NoErrorf(t, err, "X-Transcription-Chunks %q", r.Header.Get("X-Transcription-Chunks"))
	t.Logf("%s: %v wall, X-Transcription-Chunks %d, X-Device-Time-Ms %s (summed over the chunks)",
		s.URL, took.Round(time.Millisecond), chunks, r.Header.Get("X-Device-Time-Ms"))
	var res verboseResult
	r.JSON(t, &res)
	return res, chunks, took
}

// checkDecoded asserts that every segment of res is a sim decode with the decoder's own
// statistics (what only the real runner reports), and that the text is the segments' texts.
func checkDecoded(t *testing.T, res verboseResult) {
	t.Helper()
	require.Equal(t, "transcribe", res.Task)
	require.Equal(t, "english", res.Language, "unscripted language detection gives English")
	require.NotEmpty(t, res.Segments)
	text := ""
	for i, s := range res.Segments {
		what := fmt.Sprintf("segment %d %+v", i, s)
		require.Equal(t, i, s.ID, what)
		require.NotEmpty(t, s.Text, what)
		require.Equal(t, " ", s.Text[:1], "%s: verbose_json segment text starts with a space", what)
		require.Regexp(t, simSentence, s.Text[1:], what)
		if i > 0 {
			text += " "
		}
		text += s.Text[1:]
		require.NotEmpty(t, s.Tokens, "%s: the real runner reports the segment's tokens", what)
		require.NotNil(t, s.AvgLogprob, "%s: avg_logprob is a number, not null", what)
		require.NotNil(t, s.NoSpeechProb, "%s: no_speech_prob is a number, not null", what)
		require.NotNil(t, s.Temperature, what)
		require.NotNil(t, s.CompressionRatio, what)
		// Favoured tokens at log probability -0.05 over the whole vocabulary, fewer
		// competitors after whisper's filters: avg_logprob in [-0.1, 0]; no_speech_prob is
		// the unscripted 0.01 (allowing for the softmax's rounding).
		require.InDelta(t, -0.05, *s.AvgLogprob, 0.05, what)
		require.InDelta(t, 0.01, *s.NoSpeechProb, 0.005, what)
		require.Equal(t, 0.0, *s.Temperature, "%s: greedy at temperature 0, no fallback", what)
		require.Greater(t, *s.CompressionRatio, 0.0, what)
		require.Less(t, s.Start, s.End, what)
		require.LessOrEqual(t, s.End, res.Duration+1e-9, what)
		require.GreaterOrEqual(t, s.Seek, 0, what)
		if i > 0 {
			require.GreaterOrEqual(t, s.Start, res.Segments[i-1].Start, "%s: segments in file order", what)
		}
	}
	require.Equal(t, text, res.Text)
}

// TestRealWhisperShortTranscription: a short file on the real runner answers the unscripted
// sim text, with the decoder's statistics in /v1 verbose_json, and the same audio gives the
// same answer again.
func TestRealWhisperShortTranscription(t *testing.T) {
	env := realWhisperEnv(t, "MOCK_DEVICES_COUNT", "1", "DEVICE_IDS", "(0)")
	wav := wavPCM16(16000, concat(silence(16000, 0.5), tone(16000, 2.5, 220, 0.3), silence(16000, 0.7),
		tone(16000, 3, 330, 0.3), silence(16000, 0.5)))
	s := startServer(t, env)
	waitWorkersWarm(t, s, 1)

	res, chunks, _ := transcribeVerbose(t, s, wav)
	require.Equal(t, 1, chunks, "7 s of audio is one job")
	require.InDelta(t, 7.2, res.Duration, 1e-3)
	checkDecoded(t, res)
	t.Logf("text %q; segment 0: tokens %v avg_logprob %v no_speech_prob %v compression_ratio %v",
		res.Text, res.Segments[0].Tokens, *res.Segments[0].AvgLogprob, *res.Segments[0].NoSpeechProb, *res.Segments[0].CompressionRatio)

	again, _, _ := transcribeVerbose(t, s, wav)
	require.Equal(t, res, again, "the simulator is deterministic: the same audio gives the same answer")

	// The plain JSON answer is the same text.
	r := s.postMultipart(t, "/v1/audio/transcriptions", file("speech.wav", "audio/wav", wav), field("model", "whisper-1"))
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	require.Equal(t, res.Text, r.obj(t)["text"])
}

// TestRealWhisperFanoutFourWorkers is the fan-out must-show on the real runner: the 3-minute
// speechLike file on four simulated Whisper workers against one worker gives the same merged
// text and segments (decoder statistics included) in well under the single-worker time.
// Not parallel: the two timings must see the same machine.
//
// Equal answers need each speech span cut to the same samples in every chunking: before the
// runner snapped span times to whole samples (runner.splitPieces), re-basing a span to its
// chunk (a float subtraction) dropped or added a sample in about a quarter of the spans, that
// window's log-mel changed, and 6 of the 37 phrases decoded to another sentence on 4 workers.
// Seeks match because the VAD's times are whole 10 ms frames (so are the chunk offsets).
func TestRealWhisperFanoutFourWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test; skipped with -short")
	}
	wav := wavPCM16(16000, speechLike())
	one := startServer(t, realWhisperEnv(t, "MOCK_DEVICES_COUNT", "1", "DEVICE_IDS", "(0)",
		"MOCK_AUDIO_SECONDS_PER_SECOND", realWhisperFanoutLatency))
	waitWorkersWarm(t, one, 1)
	res1, n1, took1 := transcribeVerbose(t, one, wav)
	one.stopAndCheck(t)

	four := startServer(t, realWhisperEnv(t, "MOCK_DEVICES_COUNT", "4", "DEVICE_IDS", "(0),(1),(2),(3)",
		"MOCK_AUDIO_SECONDS_PER_SECOND", realWhisperFanoutLatency))
	waitWorkersWarm(t, four, 4)
	res4, n4, took4 := transcribeVerbose(t, four, wav)

	require.GreaterOrEqual(t, n1, 6, "180 s of speech makes at least six chunks of at most 30 s")
	require.GreaterOrEqual(t, n4, n1, "four workers get balanced chunks, at least as many")
	require.InDelta(t, 180.0, res1.Duration, 1e-3)
	checkDecoded(t, res1)
	require.Greater(t, len(res1.Segments), 30, "one decoded segment per VAD phrase")

	// Same merged answer on one worker and on four: text, and every segment's times, seek,
	// tokens and statistics.
	require.Equal(t, res1.Text, res4.Text)
	require.Equal(t, len(res1.Segments), len(res4.Segments))
	for i := range res1.Segments {
		require.Equal(t, res1.Segments[i], res4.Segments[i], "segment %d", i)
	}
	require.Equal(t, res1, res4)

	ratio := took4.Seconds() / took1.Seconds()
	t.Logf("real Whisper runner fan-out of a 180 s file (%d segments): 1 worker %d chunks in %v, 4 workers %d chunks in %v: ratio %.3f "+
		"(MOCK_AUDIO_SECONDS_PER_SECOND=%s)",
		len(res1.Segments), n1, took1.Round(time.Millisecond), n4, took4.Round(time.Millisecond), ratio, realWhisperFanoutLatency)
	require.Lessf(t, ratio, 0.6, "four workers took %v, one took %v", took4, took1)
}
