package server

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// speechFake answers speech jobs with a 0.5 s tone per chunk, two chunks, streamed when asked.
func speechFake() *fakeSched {
	return &fakeSched{ready: true, submit: func(_ context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		sr := req.(*runners.SpeechRequest)
		var all []float32
		for i := range 2 {
			x := make([]float32, 8000)
			for j := range x {
				x[j] = float32(0.3 * math.Sin(float64(j)*0.1*float64(i+1)))
			}
			if sr.Stream && emit != nil {
				if err := emit(&runners.SpeechChunk{Index: i, Chunks: 2, Samples: x, SampleRate: 16000}); err != nil {
					return nil, err
				}
			}
			all = append(all, x...)
		}
		id := sr.SpeakerID
		if id == "" && sr.Embedding == nil {
			id = "speaker_7306"
		}
		return &runners.SpeechResult{Samples: all, SampleRate: 16000, SpeakerID: id, Chunks: 2, Steps: 31, Tokens: 12}, nil
	}}
}

func speechServer(f *fakeSched) http.Handler {
	s := testSettings()
	s.ModelRunner = catalogue.RunnerSpeechT5
	return New(Deps{Settings: s, Service: runners.ServiceTextToSpeech, Sched: f}).Handler()
}

func embedding(n int, bad bool) string {
	b := make([]byte, 4*n)
	for i := range n {
		v := float32(i) / 1000
		if bad && i == 7 {
			v = float32(math.NaN())
		}
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestSpeechBadInput(t *testing.T) {
	h := speechServer(speechFake())
	long := strings.Repeat("a", 20001)
	for _, tc := range []struct {
		name, path, body string
		status           int
		field            string
	}{
		{"python: missing text", "/v1/audio/speech", `{"speaker_id":"speaker_7306"}`, 422, "text"},
		{"python: empty text", "/v1/audio/speech", `{"text":""}`, 422, "text"},
		{"python: whitespace text", "/v1/audio/speech", `{"text":" \n\t "}`, 422, "text"},
		{"python: 20001 chars", "/v1/audio/speech", `{"text":"` + long + `"}`, 422, "text"},
		{"python: text not a string", "/audio/speech", `{"text":5}`, 422, "text"},
		{"python: bad base64", "/v1/audio/speech", `{"text":"hi","speaker_embedding":"@@@"}`, 422, "speaker_embedding"},
		{"python: 511 floats", "/v1/audio/speech", `{"text":"hi","speaker_embedding":"` + embedding(511, false) + `"}`, 422, "speaker_embedding"},
		{"python: NaN in embedding", "/v1/audio/speech", `{"text":"hi","speaker_embedding":"` + embedding(512, true) + `"}`, 422, "speaker_embedding"},
		{"python: unknown speaker", "/v1/audio/speech", `{"text":"hi","speaker_id":"speaker_9999"}`, 422, "speaker_id"},
		{"python: both speakers", "/v1/audio/speech", `{"text":"hi","speaker_id":"speaker_7306","speaker_embedding":"` + embedding(512, false) + `"}`, 422, "speaker_embedding"},
		{"python: bad format", "/v1/audio/speech", `{"text":"hi","response_format":"opus"}`, 422, "response_format"},
		{"python: extra field", "/v1/audio/speech", `{"text":"hi","pitch":2}`, 422, "pitch"},
		{"legacy: OpenAI fields", "/audio/speech", `{"input":"hi","voice":"alloy"}`, 400, "input"},
		{"mixed dialects", "/v1/audio/speech", `{"text":"hi","voice":"alloy"}`, 400, "voice"},
		{"openai: missing model", "/v1/audio/speech", `{"input":"hi","voice":"alloy"}`, 400, "model"},
		{"openai: unknown model", "/v1/audio/speech", `{"model":"x","input":"hi","voice":"alloy"}`, 404, "model"},
		{"openai: empty input", "/v1/audio/speech", `{"model":"tts-1","input":"  ","voice":"alloy"}`, 400, "input"},
		{"openai: 4097 chars", "/v1/audio/speech", `{"model":"tts-1","input":"` + strings.Repeat("b", 4097) + `","voice":"alloy"}`, 400, "input"},
		{"openai: input not a string", "/v1/audio/speech", `{"model":"tts-1","input":["a"],"voice":"alloy"}`, 400, "input"},
		{"openai: missing voice", "/v1/audio/speech", `{"model":"tts-1","input":"hi"}`, 400, "voice"},
		{"openai: unknown voice", "/v1/audio/speech", `{"model":"tts-1","input":"hi","voice":"darth"}`, 400, "voice"},
		{"openai: voice object without id", "/v1/audio/speech", `{"model":"tts-1","input":"hi","voice":{"name":"x"}}`, 400, "voice"},
		{"openai: voice a number", "/v1/audio/speech", `{"model":"tts-1","input":"hi","voice":3}`, 400, "voice"},
		{"openai: instructions", "/v1/audio/speech", `{"model":"tts-1","input":"hi","voice":"alloy","instructions":"whisper"}`, 400, "instructions"},
		{"openai: bad format", "/v1/audio/speech", `{"model":"tts-1","input":"hi","voice":"alloy","response_format":"ogg"}`, 400, "response_format"},
		{"openai: speed too high", "/v1/audio/speech", `{"model":"tts-1","input":"hi","voice":"alloy","speed":4.5}`, 400, "speed"},
		{"openai: speed NaN string", "/v1/audio/speech", `{"model":"tts-1","input":"hi","voice":"alloy","speed":"NaN"}`, 400, "speed"},
		{"openai: speed too low", "/v1/audio/speech", `{"model":"tts-1","input":"hi","voice":"alloy","speed":0.2}`, 400, "speed"},
		{"openai: bad stream_format", "/v1/audio/speech", `{"model":"tts-1","input":"hi","voice":"alloy","stream_format":"ws"}`, 400, "stream_format"},
		{"openai: unknown field", "/v1/audio/speech", `{"model":"tts-1","input":"hi","voice":"alloy","pitch":1}`, 400, "pitch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(h, "POST", tc.path, "application/json", "Bearer k", []byte(tc.body))
			require.Equal(t, tc.status, w.Code, w.Body.String())
			require.Contains(t, w.Body.String(), tc.field)
			if tc.status == 400 && strings.HasPrefix(tc.name, "openai") {
				var e openAIErrorBody
				require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e))
				require.NotNil(t, e.Error.Param)
				require.Equal(t, tc.field, *e.Error.Param)
			}
		})
	}
}

func TestSpeechPythonDialect(t *testing.T) {
	h := speechServer(speechFake())
	w := do(h, "POST", "/audio/speech", "application/json", "Bearer k", []byte(`{"text":"Hello there."}`))
	require.Equal(t, 200, w.Code, w.Body.String())
	require.Equal(t, "audio/wav", w.Header().Get("Content-Type"))
	require.Equal(t, "true", w.Header().Get("Deprecation"))
	require.Contains(t, w.Header().Get("Link"), "/v1/audio/speech")
	b := w.Body.Bytes()
	require.Equal(t, "RIFF", string(b[:4]))
	require.Len(t, b, 44+2*16000)

	for _, tc := range []struct{ body, speaker string }{
		{`{"text":"Hi.","response_format":"JSON","speaker_id":"speaker_0100"}`, `"speaker_0100"`},
		{`{"text":"Hi.","response_format":"verbose_json"}`, `"speaker_7306"`},
		{`{"text":"Hi.","response_format":"json","speaker_embedding":"` + embedding(512, false) + `"}`, `null`},
	} {
		w = do(h, "POST", "/v1/audio/speech", "application/json", "Bearer k", []byte(tc.body))
		require.Equal(t, 200, w.Code, w.Body.String())
		var got map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got))
		require.JSONEq(t, `1`, string(got["duration"]))
		require.JSONEq(t, `16000`, string(got["sample_rate"]))
		require.JSONEq(t, `"wav"`, string(got["format"]))
		require.JSONEq(t, tc.speaker, string(got["speaker_id"]))
		var audioB64 string
		require.NoError(t, json.Unmarshal(got["audio"], &audioB64))
		wav, err := base64.StdEncoding.DecodeString(audioB64)
		require.NoError(t, err)
		require.Equal(t, "RIFF", string(wav[:4]))
	}
}

func TestSpeechOpenAIStreams(t *testing.T) {
	h := speechServer(speechFake())
	for _, tc := range []struct {
		format, ctype string
		size          int
	}{
		{"wav", "audio/wav", 44 + 2*16000},
		{"pcm", "audio/pcm", 2 * 24000},
	} {
		w := do(h, "POST", "/v1/audio/speech", "application/json", "Bearer k",
			[]byte(`{"model":"tts-1","input":"Hello.","voice":"alloy","response_format":"`+tc.format+`"}`))
		require.Equal(t, 200, w.Code, w.Body.String())
		require.Equal(t, tc.ctype, w.Header().Get("Content-Type"))
		require.InDelta(t, tc.size, w.Body.Len(), 8)
	}
	w := do(h, "POST", "/v1/audio/speech", "application/json", "Bearer k",
		[]byte(`{"model":"microsoft/speecht5_tts","input":"Hello.","voice":{"id":"speaker_0100"},"response_format":"flac","stream_format":"sse","speed":1,"instructions":""}`))
	require.Equal(t, 200, w.Code, w.Body.String())
	require.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
	var deltas []byte
	var done map[string]any
	sc := bufio.NewScanner(strings.NewReader(w.Body.String()))
	sc.Buffer(nil, 1<<20)
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
			deltas = append(deltas, b...)
		case "speech.audio.done":
			done = ev
		}
	}
	require.Equal(t, "fLaC", string(deltas[:4]))
	require.Equal(t, map[string]any{"input_tokens": 12.0, "output_tokens": 31.0, "total_tokens": 43.0}, done["usage"])

	v := do(h, "GET", "/v1/audio/voices", "", "Bearer k", nil)
	require.Equal(t, 200, v.Code)
	require.Contains(t, v.Body.String(), `"default":"speaker_7306"`)
	require.Contains(t, v.Body.String(), `"alloy"`)
	l := do(h, "GET", "/tt-liveness", "", "", nil)
	require.Contains(t, l.Body.String(), `"speech_formats":["wav","pcm","flac"`)
}

// speed stretches the streamed audio to 1/speed of its length (the fake speaks 1 s per chunk).
func TestSpeechSpeed(t *testing.T) {
	h := speechServer(speechFake())
	for _, tc := range []struct {
		speed string
		want  int
	}{{"1", 24000}, {"0.25", 96000}, {"0.5", 48000}, {"2", 12000}, {"4", 6000}} {
		w := do(h, "POST", "/v1/audio/speech", "application/json", "Bearer k",
			[]byte(`{"model":"tts-1","input":"Hello.","voice":"alloy","response_format":"pcm","speed":`+tc.speed+`}`))
		require.Equal(t, 200, w.Code, w.Body.String())
		require.InDelta(t, tc.want, w.Body.Len()/2, 8, "speed %s", tc.speed)
	}
}

func TestSpeechQueueFull(t *testing.T) {
	f := &fakeSched{ready: true, submit: func(context.Context, runners.Request, func(runners.Chunk) error) (runners.Result, error) {
		return nil, scheduler.ErrQueueFull
	}}
	h := speechServer(f)
	for _, body := range []string{`{"text":"hi"}`, `{"model":"tts-1","input":"hi","voice":"alloy"}`} {
		w := do(h, "POST", "/v1/audio/speech", "application/json", "Bearer k", []byte(body))
		require.Equal(t, 429, w.Code)
		require.Equal(t, "7", w.Header().Get("Retry-After"))
	}
}

// A client that goes away after the first chunk cancels the job's context: the runner sees it
// at its next decoder step (runners/speecht5/speecht5runner's test shows the loop stops there).
func TestSpeechDisconnectCancelsJob(t *testing.T) {
	cancelled := make(chan struct{})
	f := &fakeSched{ready: true, submit: func(ctx context.Context, _ runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		if err := emit(&runners.SpeechChunk{Samples: make([]float32, 16000), SampleRate: 16000, Chunks: 2}); err != nil {
			return nil, err
		}
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}}
	srv := httptest.NewServer(speechServer(f))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/audio/speech",
		strings.NewReader(`{"model":"tts-1","input":"hi","voice":"alloy","response_format":"pcm"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	buf := make([]byte, 1024)
	_, err = resp.Body.Read(buf) // the first chunk's audio has arrived
	require.NoError(t, err)
	cancel()
	resp.Body.Close()
	<-cancelled
}
