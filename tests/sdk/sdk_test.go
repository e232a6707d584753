// Package sdk_test proves the /v1 API against the official OpenAI SDKs: the Go SDK
// (github.com/openai/openai-go/v3) in TestGoSDK, and the `openai` npm package (pinned in
// package.json, installed by install.sh) in TestNodeSDK, which runs conformance.cjs. Both
// drive the real tt-media-server binary, built from ./cmd/tt-media-server by TestMain and run
// in mock-device mode on loopback ports, in the configurations that make it answer each error
// status the SDKs map to an exception class (binary_test.go). The one exception is 500, which
// the binary cannot be made to answer: that check runs against server.New over the real
// scheduler with an injected runner fault (fault_test.go).
package sdk_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image/jpeg"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/stretchr/testify/require"
	xwebp "golang.org/x/image/webp"

	"github.com/tenstorrent/tt-media-server-go/internal/wavtest"
)

const apiKey = "sdk-test-key"

// maxAudioBytes is the audio server's MAX_AUDIO_SIZE_BYTES, small so 413 is cheap to provoke.
const maxAudioBytes = 256 << 10

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
	return wavtest.PCM16(rate, samples)
}

func TestGoSDK(t *testing.T) {
	t.Parallel()
	f := startFleet(t)
	ctx := t.Context()
	client := func(baseURL string) openai.Client {
		return openai.NewClient(option.WithBaseURL(baseURL), option.WithAPIKey(apiKey), option.WithMaxRetries(0))
	}
	img, aud := client(f.image.V1()), client(f.audio.V1())
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

	t.Run("images.generate webp", func(t *testing.T) {
		res, err := img.Images.Generate(ctx, openai.ImageGenerateParams{
			Prompt: "a volcano on a beach", OutputFormat: openai.ImageGenerateParamsOutputFormatWebP,
			OutputCompression: openai.Int(70),
			// OpenAI's default, written out as SDK users do: the server's default level (none).
			Moderation: openai.ImageGenerateParamsModerationAuto,
		})
		require.NoError(t, err)
		require.Len(t, res.Data, 1)
		raw, err := base64.StdEncoding.DecodeString(res.Data[0].B64JSON)
		require.NoError(t, err)
		cfg, err := xwebp.DecodeConfig(bytes.NewReader(raw))
		require.NoError(t, err)
		require.Equal(t, [2]int{1024, 1024}, [2]int{cfg.Width, cfg.Height})
		require.Equal(t, openai.ImagesResponseOutputFormatWebP, res.OutputFormat)
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
		require.Empty(t, v.Words, "no word timestamps: %s", res.RawJSON())

		res, err = aud.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
			File: file(), Model: "whisper-1", ResponseFormat: openai.AudioResponseFormatVerboseJSON,
			TimestampGranularities: []string{"word"},
		})
		require.NoError(t, err)
		require.False(t, res.JSON.Segments.Valid(), "verbose_json + [word] has no segments: %s", res.RawJSON())
		require.Empty(t, res.Words, "word timestamps are left out: %s", res.RawJSON())
	})

	t.Run("transcriptions text srt vtt", func(t *testing.T) {
		text := "[simulated transcription" // the Go mock's words
		if backend == "python" {
			text = "Python fake transcription" // workers/python/fakes' whisper runner
		}
		for format, prefix := range map[openai.AudioResponseFormat]string{
			openai.AudioResponseFormatText: text,
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
		generate := func(c openai.Client, prompt string, opts ...option.RequestOption) func() error {
			return func() error {
				_, err := c.Images.Generate(ctx, openai.ImageGenerateParams{Prompt: prompt}, opts...)
				return err
			}
		}
		faultClient, warming := client(f.fault), client(f.warming.V1())
		tests := []struct {
			name   string
			call   func() error
			status int
			param  string
			code   string
			header map[string]string // response headers that must be present ("" : any value)
		}{
			{"400 bad size", func() error {
				_, err := img.Images.Generate(ctx, openai.ImageGenerateParams{Prompt: "x", Size: openai.ImageGenerateParamsSize512x512})
				return err
			}, 400, "size", "", nil},
			// /v1 has no 422: a field of the wrong type is a 400 naming the field.
			{"400 wrong type, not 422", generate(img, "x", option.WithJSONSet("n", "two")), 400, "n", "", nil},
			{"401 bad key", func() error {
				_, err := img.Models.List(ctx, option.WithAPIKey("wrong"))
				return err
			}, 401, "", "invalid_api_key", map[string]string{"WWW-Authenticate": ""}},
			{"404 unknown model", func() error { _, err := img.Models.Get(ctx, "gpt-5"); return err }, 404, "model", "model_not_found", nil},
			{"404 unknown /v1 route", func() error { return img.Get(ctx, "assistants", nil, nil) }, 404, "", "not_found", nil},
			{"405 wrong method", func() error { return img.Delete(ctx, "models", nil, nil) }, 405, "", "method_not_allowed", map[string]string{"Allow": "GET"}},
			{"409 idempotency key reused", func() error {
				key := option.WithHeader("Idempotency-Key", "sdk-go-409")
				if err := generate(img, "first", key, option.WithJSONSet("output_format", "jpeg"))(); err != nil {
					return err
				}
				return generate(img, "second", key, option.WithJSONSet("output_format", "jpeg"))()
			}, 409, "", "", nil},
			{"413 over MAX_AUDIO_SIZE_BYTES", func() error {
				_, err := aud.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{File: openai.File(bytes.NewReader(make([]byte, 2*maxAudioBytes)), "big.wav", "audio/wav"), Model: "whisper-1"})
				return err
			}, 413, "", "", nil},
			// OpenAI answers an unreadable upload 400 (BadRequestError), not 415.
			{"400 not audio", func() error {
				_, err := aud.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{File: openai.File(strings.NewReader("plain text, not audio"), "notes.txt", "text/plain"), Model: "whisper-1"})
				return err
			}, 400, "file", "", nil},
			{"400 JSON body, not multipart", func() error {
				return aud.Post(ctx, "audio/transcriptions", map[string]string{"model": "whisper-1"}, nil)
			}, 400, "", "", nil},
			{"500 runner fault (in-process server)", generate(faultClient, faultPrompt), 500, "", "", map[string]string{"x-should-retry": "false"}},
			{"503 warming up", generate(warming, "x"), 503, "", "service_unavailable",
				map[string]string{"Retry-After": "", "retry-after-ms": "", "x-should-retry": "true"}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				requireAPIError(t, tc.call(), tc.status, tc.param, tc.code, tc.header)
			})
		}
	})

	t.Run("errors 429 and 504 (queue of one, 1 s timeout)", func(t *testing.T) {
		// One worker and a queue of one hold two jobs; each takes 2 s against a 1 s timeout.
		// Three requests 50 ms apart: at least one finds both places taken (429), and every
		// admitted one times out (504).
		slow := client(f.slow.V1())
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = slow.Images.Generate(ctx, openai.ImageGenerateParams{Prompt: "slow"})
			})
			time.Sleep(50 * time.Millisecond)
		}
		wg.Wait()
		count := map[int]int{}
		for _, err := range errs {
			var apiErr *openai.Error
			require.ErrorAs(t, err, &apiErr)
			count[apiErr.StatusCode]++
			switch apiErr.StatusCode {
			case http.StatusTooManyRequests:
				requireAPIError(t, err, 429, "", "rate_limit_exceeded", map[string]string{"Retry-After": "", "retry-after-ms": "", "x-should-retry": "true"})
			case http.StatusGatewayTimeout:
				requireAPIError(t, err, 504, "", "timeout", map[string]string{"x-should-retry": "false"})
			default:
				t.Fatalf("want 429 or 504, got %s", apiErr.RawJSON())
			}
		}
		require.Positive(t, count[429], "a full queue refuses")
		require.Positive(t, count[504], "admitted jobs time out")
	})
}

// requireAPIError checks that the Go SDK surfaced err as *openai.Error with the status, the
// four keys of OpenAI's envelope (param and code as given, "" for null), and the headers.
func requireAPIError(t *testing.T, err error, status int, param, code string, header map[string]string) {
	t.Helper()
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, status, apiErr.StatusCode, apiErr.RawJSON())
	for _, f := range []respjson.Field{apiErr.JSON.Message, apiErr.JSON.Type, apiErr.JSON.Param, apiErr.JSON.Code} {
		require.NotEqual(t, respjson.Omitted, f.Raw(), "all four envelope keys present: %s", apiErr.RawJSON())
	}
	require.Empty(t, apiErr.JSON.ExtraFields, apiErr.RawJSON())
	require.NotEmpty(t, apiErr.Message)
	wantType := "invalid_request_error"
	switch {
	case status == 429:
		wantType = "rate_limit_error"
	case status >= 500:
		wantType = "server_error"
	}
	require.Equal(t, wantType, apiErr.Type)
	require.Equal(t, param, apiErr.Param)
	require.Equal(t, code, apiErr.Code)
	if param == "" {
		require.Equal(t, respjson.Null, apiErr.JSON.Param.Raw())
	}
	if code == "" {
		require.Equal(t, respjson.Null, apiErr.JSON.Code.Raw())
	}
	for k, v := range header {
		got := apiErr.Response.Header.Get(k)
		require.NotEmpty(t, got, "header %s", k)
		if v != "" {
			require.Equal(t, v, got, "header %s", k)
		}
	}
}

// nodeModules is where install.sh put the npm packages.
// nodeSDK returns node and the folder holding the official openai npm package, or skips t
// without them — fails it under CI=true, where .ci/run installs both (tests/sdk/install.sh).
func nodeSDK(t *testing.T) (node, modules string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, "node is not installed: the official npm SDK runs are skipped")
	}
	modules = nodeModules()
	if _, err := os.Stat(filepath.Join(modules, "openai", "package.json")); err != nil {
		skipOrFail(t, fmt.Sprintf("the openai npm package is not installed in %s: run tests/sdk/install.sh", modules))
	}
	return node, modules
}

// skipOrFail skips t, or fails it under CI=true, where the project's scripts install every tool.
func skipOrFail(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

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
	node, modules := nodeSDK(t)
	dir := t.TempDir()
	wavPath, bigPath := filepath.Join(dir, "speech.wav"), filepath.Join(dir, "big.wav")
	require.NoError(t, os.WriteFile(wavPath, speechWAV(), 0o600))
	require.NoError(t, os.WriteFile(bigPath, make([]byte, maxAudioBytes*2), 0o600))

	f := startFleet(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "conformance.cjs")
	cmd.Env = append(os.Environ(),
		"NODE_PATH="+modules,
		"TT_IMAGE_URL="+f.image.V1(), "TT_AUDIO_URL="+f.audio.V1(), "TT_SLOW_URL="+f.slow.V1(),
		"TT_WARMING_URL="+f.warming.V1(), "TT_FAULT_URL="+f.fault,
		"TT_API_KEY="+apiKey, "TT_WAV="+wavPath, "TT_BIG_FILE="+bigPath,
	)
	out, err := cmd.CombinedOutput()
	t.Logf("node %s:\n%s", mustVersion(node), out)
	require.NoError(t, err, "conformance.cjs failed")
	require.NotContains(t, string(out), "FAIL")
	require.Equal(t, 29, strings.Count(string(out), "\nok ")+boolInt(strings.HasPrefix(string(out), "ok ")), "every check ran")
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
