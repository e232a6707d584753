package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/media/audio"
	"github.com/tenstorrent/tt-media-server-go/media/video"
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

// Video on Python workers: fakes of HEAD's video runners (dit_runners.py's TTWan22Runner,
// TTWan22I2VRunner) on HEAD's real classes, receiving HEAD's real VideoGenerateRequest /
// VideoI2VGenerateRequest, answering HEAD's frame arrays, which travel as one raw RGB24 blob
// (never base64); the server's job store and media/video encode the MP4.

// videoJob polls a HEAD-dialect job until it reaches a terminal state and returns it.
func videoJob(t *testing.T, s *server, id string) map[string]any {
	t.Helper()
	var job map[string]any
	eventually(t, 60*time.Second, "video job "+id+" finished", func() bool {
		r := s.get(t, "/v1/videos/generations/"+id, "Authorization", bearer)
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		job = r.obj(t)
		st := job["status"]
		return st == "completed" || st == "failed" || st == "cancelled"
	})
	return job
}

// probeDownload downloads a completed job's MP4 and probes it.
func probeDownload(t *testing.T, s *server, id string) video.Info {
	t.Helper()
	_, info := downloadVideo(t, s, id)
	return info
}

// downloadVideo downloads a completed job's MP4 into a file and probes it.
func downloadVideo(t *testing.T, s *server, id string) (string, video.Info) {
	t.Helper()
	r := s.get(t, "/v1/videos/generations/"+id+"/download", "Authorization", bearer)
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	require.Equal(t, "video/mp4", r.Header.Get("Content-Type"))
	path := filepath.Join(t.TempDir(), "clip.mp4")
	require.NoError(t, os.WriteFile(path, r.Body, 0o600))
	info, err := video.Probe(context.Background(), path)
	require.NoError(t, err)
	return path, info
}

// frameMean is the mean R, G, B of frame n of an MP4 (decoded by ffmpeg).
func frameMean(t *testing.T, path string, n int) [3]float64 {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-vf", fmt.Sprintf("select=eq(n\\,%d)", n),
		"-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-").Output()
	require.NoError(t, err)
	require.NotEmpty(t, out)
	var sum [3]float64
	for i, v := range out {
		sum[i%3] += float64(v)
	}
	px := float64(len(out) / 3)
	return [3]float64{math.Round(sum[0] / px), math.Round(sum[1] / px), math.Round(sum[2] / px)}
}

// TestPythonVideo: DEVICE_BACKEND=python hosts HEAD's video runners: a T2V job (submit →
// in_progress with progress → completed → download the MP4: h264, yuv420p, 81 frames at 16
// fps, the mock's 1/8 size), a running job cancelled at the next step with the worker free
// for the next job, and an I2V job whose image lands in its frame; on HEAD's real classes and
// on the plain stand-ins.
func TestPythonVideo(t *testing.T) {
	t.Parallel()
	needFFmpeg(t)
	for _, rd := range pythonRoads {
		t.Run(rd.name, func(t *testing.T) {
			t.Parallel()
			testPythonVideo(t, rd.road(t))
		})
	}
}

func videoEnv(t *testing.T, runner, step string) map[string]string {
	return videoServerEnv(t.TempDir(), map[string]string{"MODEL_RUNNER": runner, "MOCK_STEP_SECONDS": step})
}

func testPythonVideo(t *testing.T, road e2e.PythonRoad) {
	s := startPython(t, road, videoEnv(t, "tt-wan2.2", "0.05"))
	require.Contains(t, s.stderr.String(), "tt_model_runners.dit_runners.TTWan22Runner")

	t.Run("T2V job to MP4", func(t *testing.T) {
		r := s.postJSON(t, "/v1/videos/generations", `{"prompt":"a lighthouse at dusk","num_inference_steps":4,"seed":7}`)
		require.Equalf(t, http.StatusAccepted, r.Status, "%s", r)
		id := r.obj(t)["id"].(string)
		job := videoJob(t, s, id)
		require.Equal(t, "completed", job["status"], "%v", job)
		require.EqualValues(t, 100, job["progress"])
		info := probeDownload(t, s, id)
		require.Equal(t, []any{"h264", "yuv420p", 81, 16.0, 104, 60, true},
			[]any{info.Codec, info.PixFmt, info.Frames, info.FPS, info.Width, info.Height, info.MoovFirst()})
		requireHosted(t, s, road, "video_generate_request")
	})
	t.Run("cancel while running frees the worker", func(t *testing.T) {
		r := s.postJSON(t, "/v1/videos/generations", `{"prompt":"a long one","num_inference_steps":50,"seed":1}`)
		require.Equalf(t, http.StatusAccepted, r.Status, "%s", r)
		id := r.obj(t)["id"].(string)
		eventually(t, 30*time.Second, "the job runs with progress", func() bool {
			job := s.get(t, "/v1/videos/generations/"+id, "Authorization", bearer).obj(t)
			p, _ := job["progress"].(float64)
			return job["status"] == "in_progress" && p > 0
		})
		c := s.postJSON(t, "/v1/videos/generations/"+id+"/cancel", `{}`)
		require.Lessf(t, c.Status, 300, "%s", c)
		require.Equal(t, "cancelled", videoJob(t, s, id)["status"])
		// The worker stopped at its next step: the next job runs at once (50 steps of 50 ms
		// would take 2.5 s more) and completes.
		r = s.postJSON(t, "/v1/videos/generations", `{"prompt":"after the cancel","num_inference_steps":4,"seed":2}`)
		require.Equalf(t, http.StatusAccepted, r.Status, "%s", r)
		require.Equal(t, "completed", videoJob(t, s, r.obj(t)["id"].(string))["status"])
	})

	i2v := startPython(t, road, videoEnv(t, "tt-wan2.2-i2v", "0.001"))
	t.Run("I2V job to MP4", func(t *testing.T) {
		red := image.NewRGBA(image.Rect(0, 0, 64, 40))
		draw.Draw(red, red.Rect, image.NewUniform(color.RGBA{R: 250, G: 20, B: 30, A: 255}), image.Point{}, draw.Src)
		png := encodePNG(t, red)
		body := `{"prompt":"a red card","num_inference_steps":4,"seed":3,"image_prompts":[{"image":"` +
			base64.StdEncoding.EncodeToString(png) + `","frame_pos":0}]}`
		r := i2v.postJSON(t, "/v1/videos/generations/i2v", body)
		require.Equalf(t, http.StatusAccepted, r.Status, "%s", r)
		id := r.obj(t)["id"].(string)
		require.Equal(t, "completed", videoJob(t, i2v, id)["status"])
		path, info := downloadVideo(t, i2v, id)
		require.Equal(t, []any{"h264", 81, 104, 60}, []any{info.Codec, info.Frames, info.Width, info.Height})
		requireHosted(t, i2v, road, "video_i2v_generate_request")
		// Frame 0 is the red image (H.264 moves colours a little), frame 80 is not.
		first, last := frameMean(t, path, 0), frameMean(t, path, 80)
		require.Greater(t, first[0], 200.0, "frame 0 is the I2V image: %v", first)
		require.Less(t, first[1], 60.0, "frame 0 is the I2V image: %v", first)
		require.NotEqual(t, first, last)
	})
}
