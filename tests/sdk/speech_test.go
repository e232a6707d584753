package sdk_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
)

var speechEnv = map[string]string{"MODEL_RUNNER": "tt-speecht5-tts", "MOCK_WARMUP_SECONDS": "0"}

// speechFormats are OpenAI's six response formats with what ffprobe must find in each.
var speechFormats = []struct {
	format openai.AudioSpeechNewParamsResponseFormat
	codec  string
	rate   string
}{
	{openai.AudioSpeechNewParamsResponseFormatMP3, "mp3", "16000"},
	{openai.AudioSpeechNewParamsResponseFormatOpus, "opus", "48000"},
	{openai.AudioSpeechNewParamsResponseFormatAAC, "aac", "16000"},
	{openai.AudioSpeechNewParamsResponseFormatFLAC, "flac", "16000"},
	{openai.AudioSpeechNewParamsResponseFormatWAV, "pcm_s16le", "16000"},
	{openai.AudioSpeechNewParamsResponseFormatPCM, "pcm_s16le", "24000"},
}

// probeAudio runs ffprobe on data and returns codec, sample rate and duration (seconds; for
// headerless pcm it is read as s16le at 24 kHz).
func probeAudio(t *testing.T, data []byte, format string) (codec, rate string, dur float64) {
	t.Helper()
	bin, err := exec.LookPath("ffprobe")
	if err != nil {
		require.NotEqual(t, "true", os.Getenv("CI"), "ffprobe must be installed in CI (.ci/run: ffmpeg)")
		t.Skip("ffprobe is not installed")
	}
	path := filepath.Join(t.TempDir(), "speech."+format)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	args := []string{"-v", "error", "-show_entries", "stream=codec_name,sample_rate,duration:format=duration", "-of", "json"}
	if format == "pcm" {
		args = append(args, "-f", "s16le", "-ar", "24000", "-ac", "1")
	}
	out, err := exec.Command(bin, append(args, path)...).Output()
	require.NoError(t, err, format)
	var p struct {
		Streams []struct {
			CodecName  string `json:"codec_name"`
			SampleRate string `json:"sample_rate"`
			Duration   string `json:"duration"`
		} `json:"streams"`
		Format struct {
			Duration string `json:"duration"`
		} `json:"format"`
	}
	require.NoError(t, json.Unmarshal(out, &p))
	require.Len(t, p.Streams, 1)
	d := p.Format.Duration
	if d == "" || d == "N/A" {
		d = p.Streams[0].Duration
	}
	if d != "" && d != "N/A" {
		dur, _ = strconv.ParseFloat(d, 64)
	}
	if dur == 0 && format == "flac" { // a streamed FLAC's STREAMINFO has no total: count the samples
		dec, err := exec.Command(bin, "-v", "error", "-count_packets", "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", path).Output()
		require.NoError(t, err)
		require.NotEmpty(t, strings.TrimSpace(string(dec)))
		dur = -1
	}
	return p.Streams[0].CodecName, p.Streams[0].SampleRate, dur
}

// TestSpeechSDKs: openai-go's Audio.Speech.New and the npm package's audio.speech.create
// against the real binary (tt-speecht5-tts in mock-device mode), every response_format and
// stream_format "sse", each answer checked with ffprobe.
func TestSpeechSDKs(t *testing.T) {
	t.Parallel()
	srv := launch(t, "speech server", speechEnv)
	srv.waitLiveness(t, http.StatusOK, 30*time.Second)
	ctx := t.Context()
	client := openai.NewClient(option.WithBaseURL(srv.V1()), option.WithAPIKey(apiKey), option.WithMaxRetries(0))
	const input = "Hello from the 2nd speech test. It has two sentences."
	var wavDur float64
	for _, f := range speechFormats {
		t.Run("go "+string(f.format), func(t *testing.T) {
			resp, err := client.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{Input: input, Model: openai.SpeechModelTTS1,
				Voice:          openai.AudioSpeechNewParamsVoiceUnion{OfAudioSpeechNewsVoiceString2: openai.String(string(openai.AudioSpeechNewParamsVoiceString2Alloy))},
				ResponseFormat: f.format})
			require.NoError(t, err)
			data, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			codec, rate, dur := probeAudio(t, data, string(f.format))
			t.Logf("ffprobe %-4s: codec %s, sample rate %s Hz, duration %.3f s, %d bytes", f.format, codec, rate, dur, len(data))
			require.Equal(t, f.codec, codec)
			require.Equal(t, f.rate, rate)
			if f.format == openai.AudioSpeechNewParamsResponseFormatWAV {
				wavDur = dur
			}
			if dur > 0 && wavDur > 0 {
				require.InDelta(t, wavDur, dur, 0.15, "same speech in every format")
			}
		})
	}
	t.Run("go sse", func(t *testing.T) {
		resp, err := client.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{Input: input, Model: openai.SpeechModelTTS1,
			Voice:          openai.AudioSpeechNewParamsVoiceUnion{OfAudioSpeechNewsVoiceID: &openai.AudioSpeechNewParamsVoiceID{ID: "speaker_0100"}},
			ResponseFormat: openai.AudioSpeechNewParamsResponseFormatMP3, StreamFormat: openai.AudioSpeechNewParamsStreamFormatSSE})
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		var audio []byte
		var done map[string]any
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &ev))
			switch ev["type"] {
			case "speech.audio.delta":
				b, err := base64.StdEncoding.DecodeString(ev["audio"].(string))
				require.NoError(t, err)
				audio = append(audio, b...)
			case "speech.audio.done":
				done = ev
			default:
				t.Fatalf("unexpected event %v", ev)
			}
		}
		require.NoError(t, sc.Err())
		require.NotNil(t, done)
		usage := done["usage"].(map[string]any)
		require.Positive(t, usage["input_tokens"])
		require.Positive(t, usage["output_tokens"])
		codec, rate, _ := probeAudio(t, audio, "mp3")
		require.Equal(t, "mp3", codec)
		require.Equal(t, "16000", rate)
	})
	// speed is a pitch-preserving time stretch (media/tempo's test checks the pitch): the audio
	// lasts 1/speed as long.
	t.Run("go speed", func(t *testing.T) {
		samples := func(speed float64) float64 {
			params := openai.AudioSpeechNewParams{Input: input, Model: openai.SpeechModelTTS1,
				Voice:          openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")},
				ResponseFormat: openai.AudioSpeechNewParamsResponseFormatPCM}
			if speed != 1 {
				params.Speed = openai.Float(speed)
			}
			resp, err := client.Audio.Speech.New(ctx, params)
			require.NoError(t, err)
			data, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			return float64(len(data) / 2)
		}
		normal := samples(1)
		require.Positive(t, normal)
		for _, speed := range []float64{0.5, 2, 4} {
			require.InDelta(t, normal/speed, samples(speed), 0.01*normal/speed, "speed %v", speed)
		}
	})
	t.Run("go refusals", func(t *testing.T) {
		for _, tc := range []struct {
			param  string
			params openai.AudioSpeechNewParams
		}{
			{"voice", openai.AudioSpeechNewParams{Input: input, Model: openai.SpeechModelTTS1,
				Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("nobody")}}},
			{"instructions", openai.AudioSpeechNewParams{Input: input, Model: openai.SpeechModelTTS1,
				Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")}, Instructions: openai.String("be cheerful")}},
			{"speed", openai.AudioSpeechNewParams{Input: input, Model: openai.SpeechModelTTS1,
				Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")}, Speed: openai.Float(4.5)}},
		} {
			resp, err := client.Audio.Speech.New(ctx, tc.params)
			if resp != nil {
				_ = resp.Body.Close()
			}
			requireAPIError(t, err, http.StatusBadRequest, tc.param, "", nil)
		}
	})
	t.Run("node audio.speech.create", func(t *testing.T) {
		node, modules := nodeSDK(t)
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		dir := t.TempDir()
		cmd := exec.CommandContext(ctx, node, "speech.cjs")
		cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "TT_SPEECH_URL="+srv.V1(), "TT_API_KEY="+apiKey, "TT_OUT_DIR="+dir)
		out, err := cmd.CombinedOutput()
		t.Logf("node %s:\n%s", mustVersion(node), out)
		require.NoError(t, err, "speech.cjs failed")
		require.NotContains(t, string(out), "FAIL")
		require.Equal(t, 8, strings.Count("\n"+string(out), "\nok "), "every check ran")
		for _, f := range speechFormats {
			data, err := os.ReadFile(filepath.Join(dir, "speech."+string(f.format)))
			require.NoError(t, err)
			codec, rate, _ := probeAudio(t, data, string(f.format))
			require.Equal(t, f.codec, codec, "node %s", f.format)
			require.Equal(t, f.rate, rate, "node %s", f.format)
		}
	})
}
