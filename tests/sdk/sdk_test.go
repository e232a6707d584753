// Package sdk_test proves the /v1 API against the official OpenAI SDKs: the Go SDK
// (github.com/openai/openai-go/v3) in TestGoSDK, and the `openai` npm package (pinned in
// package.json, installed by install.sh) in TestNodeSDK, which runs conformance.cjs. Both
// drive real servers on loopback: server.New over the real scheduler and the mock-device
// runners, as cmd/tt-media-server wires them, plus a fault seam that fails image prompts
// starting with "fault:<status>" so that every status the SDKs map to an exception class can
// be provoked.
package sdk_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"image/jpeg"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/mock"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
	"github.com/tenstorrent/tt-media-server-go/server"
)

const apiKey = "sdk-test-key"

// maxAudioBytes is the audio server's MAX_AUDIO_SIZE_BYTES, small so 413 is cheap to provoke.
const maxAudioBytes = 2 << 20

// faultSched is the real scheduler with a seam: image requests whose prompt is
// "fault:429", "fault:500" or "fault:503" fail as the scheduler or a runner would.
type faultSched struct{ *scheduler.Scheduler }

func (f faultSched) Submit(ctx context.Context, req any, emit func(any) error) (any, error) {
	if r, ok := req.(*runners.ImageRequest); ok {
		switch r.Prompt {
		case "fault:429":
			return nil, &scheduler.Rejection{Err: scheduler.ErrQueueFull, RetryAfter: 2 * time.Second}
		case "fault:503":
			return nil, &scheduler.Rejection{Err: scheduler.ErrNotReady, RetryAfter: time.Second}
		case "fault:500":
			return nil, errors.New("simulated device fault")
		}
	}
	return f.Scheduler.Submit(ctx, req, emit)
}

// startServer runs the server for one MODEL_RUNNER with zero mock latency and returns its
// /v1 base URL.
func startServer(t *testing.T, runner string) string {
	t.Helper()
	env := map[string]string{
		"MODEL_RUNNER": runner, "API_KEY": apiKey, "MOCK_DEVICES_COUNT": "1",
		"MOCK_WARMUP_SECONDS": "0", "MOCK_STEP_SECONDS": "0", "MOCK_AUDIO_SECONDS_PER_SECOND": "0",
		"MAX_AUDIO_SIZE_BYTES": "2097152",
	}
	settings, err := config.LoadFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, "", true)
	require.NoError(t, err)
	reg := runners.NewRegistry()
	mock.Register(reg)
	service, err := reg.Service(settings.ModelRunner)
	require.NoError(t, err)
	sched := scheduler.New(scheduler.Config{
		Groups: settings.DeviceGroups, QueueSize: settings.MaxQueueSize, MaxBatchSize: settings.MaxBatchSize,
		Timeout: settings.InferenceTimeout, MaxRestarts: settings.MaxWorkerRestarts, CheckInterval: time.Hour,
	}, func(g config.DeviceGroup) (runners.Runner, error) {
		return reg.New(settings.ModelRunner, runners.WorkerSpec{WorkerID: g.ID, Devices: g.Devices, Mesh: settings.DeviceMeshShape, Settings: settings})
	})
	ctx, cancel := context.WithCancel(context.Background())
	sched.Start(ctx)
	srv := httptest.NewServer(server.New(server.Deps{Settings: settings, Service: service, Sched: faultSched{sched}, Mock: true}).Handler())
	t.Cleanup(func() {
		srv.Close()
		stop, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		require.NoError(t, sched.Stop(stop))
		cancel()
	})
	require.Eventually(t, sched.Ready, 10*time.Second, 10*time.Millisecond, "mock workers did not warm up")
	return srv.URL + "/v1"
}

// speechWAV is 3 s of 16 kHz mono audio: two tone bursts with a pause between them, so
// that pre-processing finds more than one speech segment.
func speechWAV() []byte {
	const rate = 16000
	samples := make([]int16, 3*rate)
	for i := range samples {
		t := float64(i) / rate
		if t < 1.0 || (t >= 1.8 && t < 2.7) {
			samples[i] = int16(9000 * math.Sin(2*math.Pi*220*t) * (0.6 + 0.4*math.Sin(2*math.Pi*3*t)))
		}
	}
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + 2*len(samples)))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(uint16(1))
	w(uint16(1))
	w(uint32(rate))
	w(uint32(2 * rate))
	w(uint16(2))
	w(uint16(16))
	b.WriteString("data")
	w(uint32(2 * len(samples)))
	w(samples)
	return b.Bytes()
}

func TestGoSDK(t *testing.T) {
	t.Parallel()
	imageURL := startServer(t, mock.RunnerSDXL)
	audioURL := startServer(t, mock.RunnerWhisper)
	ctx := t.Context()
	img := openai.NewClient(option.WithBaseURL(imageURL), option.WithAPIKey(apiKey), option.WithMaxRetries(0))
	aud := openai.NewClient(option.WithBaseURL(audioURL), option.WithAPIKey(apiKey), option.WithMaxRetries(0))
	wav := speechWAV()
	file := func() *bytes.Reader { return bytes.NewReader(wav) }

	t.Run("models", func(t *testing.T) {
		page, err := aud.Models.List(ctx)
		require.NoError(t, err)
		var ids []string
		for _, m := range page.Data {
			ids = append(ids, m.ID)
		}
		require.Equal(t, []string{"openai-whisper-large-v3", "tt-whisper", "whisper-1"}, ids)
		m, err := aud.Models.Get(ctx, "whisper-1")
		require.NoError(t, err)
		require.Equal(t, "tenstorrent", m.OwnedBy)
	})

	t.Run("images.generate b64_json", func(t *testing.T) {
		// JPEG: PNG-encoding a 1024² image takes ~6 s under -race (the default PNG output is
		// checked once, in conformance.cjs).
		res, err := img.Images.Generate(ctx, openai.ImageGenerateParams{
			Prompt: "a volcano on a beach", Model: openai.ImageModelDallE3, N: openai.Int(2),
			Size: openai.ImageGenerateParamsSize1024x1024, ResponseFormat: openai.ImageGenerateParamsResponseFormatB64JSON,
			OutputFormat: openai.ImageGenerateParamsOutputFormatJPEG,
		})
		require.NoError(t, err)
		require.Len(t, res.Data, 2)
		for _, d := range res.Data {
			raw, err := base64.StdEncoding.DecodeString(d.B64JSON)
			require.NoError(t, err)
			cfg, err := jpeg.DecodeConfig(bytes.NewReader(raw))
			require.NoError(t, err)
			require.Equal(t, [2]int{1024, 1024}, [2]int{cfg.Width, cfg.Height})
		}
		require.NotEqual(t, res.Data[0].B64JSON, res.Data[1].B64JSON, "the n images of one request differ")
		require.Equal(t, openai.ImagesResponseOutputFormatJPEG, res.OutputFormat)
		require.Equal(t, openai.ImagesResponseSize1024x1024, res.Size)
	})

	t.Run("transcriptions json and verbose_json", func(t *testing.T) {
		res, err := aud.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
			File: openai.File(file(), "speech.wav", "audio/wav"), Model: "whisper-1", Language: openai.String("en"), Temperature: openai.Float(0),
		})
		require.NoError(t, err)
		require.NotEmpty(t, res.Text)
		require.Equal(t, "duration", res.Usage.Type)

		res, err = aud.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
			File: file(), Model: "whisper-1", ResponseFormat: openai.AudioResponseFormatVerboseJSON,
			TimestampGranularities: []string{"word", "segment"},
		})
		require.NoError(t, err)
		v := res.AsTranscriptionVerbose()
		require.Equal(t, "english", v.Language)
		require.InDelta(t, 3.0, v.Duration, 0.01)
		require.GreaterOrEqual(t, len(v.Segments), 2, "the pause splits the audio: %s", res.RawJSON())
		for i, s := range v.Segments {
			require.Equal(t, int64(i), s.ID)
			require.LessOrEqual(t, s.Start, s.End)
			// Present, and null: the runner does not report log-probabilities yet.
			require.Equal(t, respjson.Null, s.JSON.AvgLogprob.Raw())
			require.Equal(t, respjson.Null, s.JSON.NoSpeechProb.Raw())
			require.Positive(t, s.CompressionRatio)
		}
		require.NotEmpty(t, v.Words)

		res, err = aud.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
			File: file(), Model: "whisper-1", ResponseFormat: openai.AudioResponseFormatVerboseJSON,
			TimestampGranularities: []string{"word"},
		})
		require.NoError(t, err)
		require.False(t, res.JSON.Segments.Valid(), "verbose_json + [word] has no segments: %s", res.RawJSON())
		require.NotEmpty(t, res.Words)
	})

	t.Run("transcriptions text srt vtt", func(t *testing.T) {
		for format, prefix := range map[openai.AudioResponseFormat]string{
			openai.AudioResponseFormatText: "[simulated transcription",
			openai.AudioResponseFormatSRT:  "1\n00:00:0",
			openai.AudioResponseFormatVTT:  "WEBVTT\n\n00:00:0",
		} {
			var out string
			err := aud.Post(ctx, "audio/transcriptions", openai.AudioTranscriptionNewParams{File: file(), Model: "whisper-1", ResponseFormat: format}, &out)
			require.NoError(t, err, format)
			require.True(t, strings.HasPrefix(out, prefix), "%s: %q", format, out)
			require.True(t, strings.HasSuffix(out, "\n"), "%s: %q", format, out)
		}
	})

	t.Run("transcriptions stream", func(t *testing.T) {
		stream := aud.Audio.Transcriptions.NewStreaming(ctx, openai.AudioTranscriptionNewParams{File: file(), Model: "whisper-1"})
		var deltas strings.Builder
		var types []string
		var done openai.TranscriptionStreamEventUnion
		for stream.Next() {
			ev := stream.Current()
			types = append(types, ev.Type)
			if ev.Type == "transcript.text.delta" {
				deltas.WriteString(ev.Delta)
			} else {
				done = ev
			}
		}
		require.NoError(t, stream.Err())
		require.NoError(t, stream.Close())
		require.Greater(t, len(types), 2)
		require.Equal(t, "transcript.text.delta", types[0])
		require.Equal(t, "transcript.text.done", types[len(types)-1])
		require.Equal(t, done.Text, deltas.String())
	})

	t.Run("translations", func(t *testing.T) {
		res, err := aud.Audio.Translations.New(ctx, openai.AudioTranslationNewParams{File: file(), Model: "whisper-1"})
		require.NoError(t, err)
		require.NotEmpty(t, res.Text)
	})

	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name   string
			call   func() error
			status int
			code   string
		}{
			{"400 size", func() error {
				_, err := img.Images.Generate(ctx, openai.ImageGenerateParams{Prompt: "x", Size: openai.ImageGenerateParamsSize512x512})
				return err
			}, 400, ""},
			{"401", func() error {
				bad := openai.NewClient(option.WithBaseURL(imageURL), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
				_, err := bad.Models.List(ctx)
				return err
			}, 401, "invalid_api_key"},
			{"404", func() error { _, err := img.Models.Get(ctx, "gpt-5"); return err }, 404, "model_not_found"},
			{"413", func() error {
				_, err := aud.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{File: bytes.NewReader(make([]byte, maxAudioBytes*2)), Model: "whisper-1"})
				return err
			}, 413, ""},
			{"429", func() error {
				_, err := img.Images.Generate(ctx, openai.ImageGenerateParams{Prompt: "fault:429"})
				return err
			}, 429, "rate_limit_exceeded"},
			{"500", func() error {
				_, err := img.Images.Generate(ctx, openai.ImageGenerateParams{Prompt: "fault:500"})
				return err
			}, 500, ""},
			{"503", func() error {
				_, err := img.Images.Generate(ctx, openai.ImageGenerateParams{Prompt: "fault:503"})
				return err
			}, 503, "service_unavailable"},
		}
		for _, tc := range tests {
			var apiErr *openai.Error
			err := tc.call()
			require.ErrorAs(t, err, &apiErr, tc.name)
			require.Equal(t, tc.status, apiErr.StatusCode, tc.name)
			require.Equal(t, tc.code, apiErr.Code, tc.name)
			require.NotEmpty(t, apiErr.Message, tc.name)
			for _, f := range []respjson.Field{apiErr.JSON.Message, apiErr.JSON.Type, apiErr.JSON.Param, apiErr.JSON.Code} {
				require.NotEqual(t, respjson.Omitted, f.Raw(), "%s: all four envelope keys present: %s", tc.name, apiErr.RawJSON())
			}
		}
	})
}

// nodeModules is where install.sh put the npm packages.
func nodeModules() string {
	dir := os.Getenv("TT_SDK_NODE_DIR")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".cache", "tt-media-server-go", "sdk-node")
	}
	return filepath.Join(dir, "node_modules")
}

func TestNodeSDK(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the official npm SDK conformance run is skipped")
	}
	modules := nodeModules()
	if _, err := os.Stat(filepath.Join(modules, "openai", "package.json")); err != nil {
		t.Skipf("the openai npm package is not installed in %s: run tests/sdk/install.sh (TestNodeSDK skipped)", modules)
	}
	dir := t.TempDir()
	wavPath, bigPath := filepath.Join(dir, "speech.wav"), filepath.Join(dir, "big.wav")
	require.NoError(t, os.WriteFile(wavPath, speechWAV(), 0o600))
	require.NoError(t, os.WriteFile(bigPath, make([]byte, maxAudioBytes*2), 0o600))

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "conformance.cjs")
	cmd.Env = append(os.Environ(),
		"NODE_PATH="+modules,
		"TT_IMAGE_URL="+startServer(t, mock.RunnerSDXL),
		"TT_AUDIO_URL="+startServer(t, mock.RunnerWhisper),
		"TT_API_KEY="+apiKey, "TT_WAV="+wavPath, "TT_BIG_FILE="+bigPath,
	)
	out, err := cmd.CombinedOutput()
	t.Logf("node %s:\n%s", mustVersion(node), out)
	require.NoError(t, err, "conformance.cjs failed")
	require.NotContains(t, string(out), "FAIL")
	require.Equal(t, 23, strings.Count(string(out), "\nok ")+boolInt(strings.HasPrefix(string(out), "ok ")), "every check ran")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mustVersion(node string) string {
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}
