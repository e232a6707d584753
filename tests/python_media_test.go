package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/media/audio"
	"github.com/tenstorrent/tt-media-server-go/tests/e2e"
)

// Text-to-speech on Python workers: a fake of HEAD's TTSpeechT5Runner
// (workers/python/fakes/tt_model_runners/speecht5_runner.py) on HEAD's real BaseDeviceRunner,
// receiving HEAD's real TextToSpeechRequest, answering HEAD's TextToSpeechResponse (a base64
// WAV), which the worker turns into raw float32 samples on the wire; the server's own encoders
// (media/audioenc) and streaming write every format of both dialects.

// fakeSpeechSeconds is the fake voice's length: 65 ms per character of the trimmed text.
func fakeSpeechSeconds(text string) float64 {
	return 0.065 * float64(len([]rune(strings.TrimSpace(text))))
}

// decodeSpeech decodes an answer's audio (any container the server writes) at its own rate.
func decodeSpeech(t *testing.T, data []byte) *audio.Decoded {
	t.Helper()
	d, err := audio.Decode(context.Background(), data, 0, audio.Limits{})
	require.NoError(t, err)
	return d
}

func rms(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(max(len(x), 1)))
}

// TestPythonSpeech: DEVICE_BACKEND=python with MODEL_RUNNER=tt-speecht5-tts serves
// /v1/audio/speech in HEAD's dialect (text, speaker_id, speaker_embedding, response_format
// json/wav) and OpenAI's (input, voice, every response_format, SSE), on HEAD's real classes and
// on the plain stand-ins.
func TestPythonSpeech(t *testing.T) {
	t.Parallel()
	for _, rd := range pythonRoads {
		t.Run(rd.name, func(t *testing.T) {
			t.Parallel()
			testPythonSpeech(t, rd.road(t))
		})
	}
}

func testPythonSpeech(t *testing.T, road e2e.PythonRoad) {
	s := startPython(t, road, map[string]string{"MODEL_RUNNER": "tt-speecht5-tts", "DEVICE_IDS": "(0)",
		"MOCK_TTS_STEP_SECONDS": "0"})
	require.Contains(t, s.stderr.String(), "tt_model_runners.speecht5_runner.TTSpeechT5Runner")
	const text = "Hello from the worker."
	var wavSamples []float32

	t.Run("HEAD dialect, JSON", func(t *testing.T) {
		r := s.postJSON(t, "/v1/audio/speech", `{"text":"`+text+`","response_format":"json"}`)
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		var out struct {
			Audio      string  `json:"audio"`
			Duration   float64 `json:"duration"`
			SampleRate int     `json:"sample_rate"`
			Format     string  `json:"format"`
			SpeakerID  *string `json:"speaker_id"`
		}
		r.JSON(t, &out)
		require.Equal(t, 16000, out.SampleRate)
		require.InDelta(t, fakeSpeechSeconds(text), out.Duration, 1e-3)
		require.NotNil(t, out.SpeakerID)
		require.Equal(t, "speaker_7306", *out.SpeakerID, "the speaker HEAD's runner used by default")
		data, err := base64.StdEncoding.DecodeString(out.Audio)
		require.NoError(t, err)
		d := decodeSpeech(t, data)
		require.Equal(t, 16000, d.SampleRate)
		require.Len(t, d.Samples, int(math.Round(fakeSpeechSeconds(text)*16000)))
		require.Greater(t, rms(d.Samples), 0.05, "audible")
		wavSamples = d.Samples
		requireHosted(t, s, road, "text_to_speech_request")
	})
	t.Run("HEAD dialect, WAV, speakers", func(t *testing.T) {
		a := s.postJSON(t, "/v1/audio/speech", `{"text":"`+text+`"}`)
		require.Equalf(t, http.StatusOK, a.Status, "%s", a)
		require.Equal(t, "RIFF", string(a.Body[:4]))
		b := s.postJSON(t, "/v1/audio/speech", `{"text":"`+text+`","speaker_id":"speaker_7306"}`)
		require.Equal(t, a.Body, b.Body, "the default speaker is speaker_7306, and the voice is deterministic")
		c := s.postJSON(t, "/v1/audio/speech", `{"text":"`+text+`","speaker_id":"speaker_0100"}`)
		require.Equalf(t, http.StatusOK, c.Status, "%s", c)
		require.NotEqual(t, a.Body, c.Body, "another speaker, another voice")
		emb := make([]byte, 4*512)
		for i := range 512 {
			binary.LittleEndian.PutUint32(emb[4*i:], math.Float32bits(float32(i%7)/10))
		}
		e := s.postJSON(t, "/v1/audio/speech", `{"text":"`+text+`","speaker_embedding":"`+base64.StdEncoding.EncodeToString(emb)+`","response_format":"json"}`)
		require.Equalf(t, http.StatusOK, e.Status, "%s", e)
		require.Nil(t, e.obj(t)["speaker_id"], "a client's x-vector has no speaker id")
		bad := s.postJSON(t, "/v1/audio/speech", `{"text":"[[bad]] `+text+`"}`)
		require.Equalf(t, http.StatusBadRequest, bad.Status, "%s", bad)
		require.Contains(t, string(bad.Body), "fake runner refuses the request")
	})
	t.Run("OpenAI dialect, every format", func(t *testing.T) {
		require.NotNil(t, wavSamples)
		for _, f := range []string{"wav", "flac", "mp3", "opus", "aac", "pcm"} {
			r := s.postJSON(t, "/v1/audio/speech", `{"model":"tts-1","input":"`+text+`","voice":"alloy","response_format":"`+f+`"}`)
			require.Equalf(t, http.StatusOK, r.Status, "%s: %s", f, r)
			require.NotEmpty(t, r.Body, f)
			switch f {
			case "wav", "flac": // lossless: the worker's samples, bit for bit at 16 bits
				d := decodeSpeech(t, r.Body)
				require.Len(t, d.Samples, len(wavSamples), f)
			case "pcm": // 24 kHz s16le
				require.InDelta(t, fakeSpeechSeconds(text)*24000*2, float64(len(r.Body)), 2*24000*0.01, f)
			}
		}
	})
	t.Run("OpenAI dialect, SSE", func(t *testing.T) {
		r := s.postJSON(t, "/v1/audio/speech", `{"model":"tts-1","input":"`+text+`","voice":{"id":"speaker_0100"},"response_format":"pcm","stream_format":"sse"}`)
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		var pcm []byte
		var done bool
		sc := bufio.NewScanner(bytes.NewReader(r.Body))
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Type  string `json:"type"`
				Audio string `json:"audio"`
			}
			require.NoError(t, json.Unmarshal([]byte(line), &ev))
			switch ev.Type {
			case "speech.audio.delta":
				b, err := base64.StdEncoding.DecodeString(ev.Audio)
				require.NoError(t, err)
				pcm = append(pcm, b...)
			case "speech.audio.done":
				done = true
			}
		}
		require.True(t, done, "%s", r)
		require.InDelta(t, fakeSpeechSeconds(text)*24000*2, float64(len(pcm)), 2*24000*0.01)
	})
}
