package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// headAudioServer serves a fake Whisper that streams two chunks and answers two segments.
func headAudioServer(t *testing.T, language, task string) (*fakeSched, *Server) {
	t.Helper()
	f := &fakeSched{ready: true, submit: func(_ context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		if emit != nil {
			for i, w := range []string{"hello", "", "world"} {
				if err := emit(runners.TranscriptChunk{Text: w, ChunkID: i + 1}); err != nil {
					return nil, err
				}
			}
		}
		return &runners.TranscriptionResult{Text: "hello world", Task: "transcribe", Language: "english", Duration: 2,
			Segments: []runners.TranscriptionSegment{{ID: 0, Speaker: "SPEAKER_00", StartTime: 0.25, EndTime: 1, Text: "hello"},
				{ID: 1, Speaker: "SPEAKER_00", StartTime: 1.1, EndTime: 1.75, Text: "world"}}}, nil
	}}
	cfg := testSettings()
	cfg.ModelRunner = "tt-whisper"
	cfg.AudioLanguage, cfg.AudioTask = language, task
	cfg.AllowAudioFanout = false
	return f, New(Deps{Settings: cfg, Service: runners.ServiceAudio, Sched: f})
}

func f64(v float64) *float64 { return &v }

// TestPythonAudioFields checks HEAD's AudioProcessingRequest fields on the Python dialect, in
// JSON and in multipart: each is honoured (it reaches the runner request or shapes the answer)
// or refused with an error naming it.
func TestPythonAudioFields(t *testing.T) {
	wav := testWAV(16000, 32000)
	b64 := base64.StdEncoding.EncodeToString(wav)
	type want struct {
		status     int
		ctype      string
		body       string // exact body when set
		contains   []string
		temps      []float64
		thresholds [3]*float64
		prompt     string
	}
	headDefaults := [3]*float64{f64(2.4), f64(-2.0), f64(0.6)}
	tests := []struct {
		name   string
		path   string
		json   string   // JSON fields besides "file", or
		form   []string // form fields besides the file part
		want   want
		noFile bool
	}{
		{name: "defaults: verbose_json, one greedy pass, HEAD's thresholds", json: ``,
			want: want{status: 200, ctype: "application/json", temps: []float64{0}, thresholds: headDefaults,
				contains: []string{`"text":"hello world"`, `"duration":2`}}},
		{name: "text answer", json: `,"response_format":"TEXT"`,
			want: want{status: 200, ctype: "text/plain; charset=utf-8", body: "hello world", temps: []float64{0}, thresholds: headDefaults}},
		{name: "json is the same object as verbose_json", json: `,"response_format":"json"`,
			want: want{status: 200, ctype: "application/json", contains: []string{`"text":"hello world"`}, temps: []float64{0}, thresholds: headDefaults}},
		{name: "temperatures list and thresholds", json: `,"temperatures":[0,0.2,0.4],"compression_ratio_threshold":2.0,"logprob_threshold":-1,"no_speech_threshold":0.5`,
			want: want{status: 200, temps: []float64{0, 0.2, 0.4}, thresholds: [3]*float64{f64(2), f64(-1), f64(0.5)}}},
		{name: "temperatures as one number", json: `,"temperatures":0.3`, want: want{status: 200, temps: []float64{0.3}, thresholds: headDefaults}},
		{name: "temperatures as a comma string", json: `,"temperatures":"0.0, 0.5"`, want: want{status: 200, temps: []float64{0, 0.5}, thresholds: headDefaults}},
		{name: "null thresholds are HEAD's defaults", json: `,"logprob_threshold":null`, want: want{status: 200, temps: []float64{0}, thresholds: headDefaults}},
		{name: "prompt reaches the runner", json: `,"prompt":"Tenstorrent, Galaxy"`, want: want{status: 200, prompt: "Tenstorrent, Galaxy", temps: []float64{0}, thresholds: headDefaults}},
		{name: "return_timestamps adds start and end", json: `,"return_timestamps":true`,
			want: want{status: 200, contains: []string{`"start":0.25`, `"end":1.75`}, temps: []float64{0}, thresholds: headDefaults}},
		{name: "diarization refused", json: `,"perform_diarization":true`, want: want{status: 400, contains: []string{"perform_diarization", "diarization"}}},
		{name: "diarization off is fine", json: `,"perform_diarization":false`, want: want{status: 200, temps: []float64{0}, thresholds: headDefaults}},
		{name: "bad response_format", json: `,"response_format":"srt"`, want: want{status: 422, contains: []string{`"response_format"`}}},
		{name: "bad temperatures", json: `,"temperatures":"hot"`, want: want{status: 422, contains: []string{`"temperatures"`, "comma-separated"}}},
		{name: "temperature over 1", json: `,"temperatures":[0,1.5]`, want: want{status: 422, contains: []string{`"temperatures"`, "between 0 and 1"}}},
		{name: "threshold not a number", json: `,"no_speech_threshold":"high"`, want: want{status: 422, contains: []string{`"no_speech_threshold"`}}},
		{name: "stream as text: chunk lines, no result object", json: `,"stream":true,"response_format":"text"`,
			want: want{status: 200, ctype: "text/plain; charset=utf-8", body: "hello\nworld\n", temps: []float64{0}, thresholds: headDefaults}},
		{name: "stream as ndjson ends with the result", json: `,"stream":true,"return_timestamps":true`,
			want: want{status: 200, ctype: "application/x-ndjson", contains: []string{`{"text": "hello", "chunk_id": 1}`, `"start": 0.25`}, temps: []float64{0}, thresholds: headDefaults}},
		{name: "multipart: every field as a form value", form: []string{"response_format", "verbose_json", "temperatures", "0.0,0.2",
			"compression_ratio_threshold", "2.2", "logprob_threshold", "-1.5", "no_speech_threshold", "0.7", "return_timestamps", "true", "prompt", "hi"},
			want: want{status: 200, contains: []string{`"start":0.25`}, temps: []float64{0, 0.2}, thresholds: [3]*float64{f64(2.2), f64(-1.5), f64(0.7)}, prompt: "hi"}},
		{name: "multipart text", form: []string{"response_format", "text"}, want: want{status: 200, ctype: "text/plain; charset=utf-8", body: "hello world", temps: []float64{0}, thresholds: headDefaults}},
		{name: "multipart diarization refused", form: []string{"perform_diarization", "true"}, want: want{status: 400, contains: []string{"perform_diarization"}}},
		{name: "multipart bad bool", form: []string{"return_timestamps", "perhaps"}, want: want{status: 422, contains: []string{"return_timestamps"}}},
		{name: "legacy path takes the same fields", path: "/audio/transcriptions", json: `,"response_format":"text"`,
			want: want{status: 200, body: "hello world", temps: []float64{0}, thresholds: headDefaults}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := headAudioServer(t, "English", "transcribe")
			path := tc.path
			if path == "" {
				path = "/v1/audio/transcriptions"
			}
			var w *httptest.ResponseRecorder
			if tc.form != nil {
				ct, body := multipartBody(t, wav, tc.form...)
				w = dialectReq(srv.Handler(), path, ct, body)
			} else {
				w = dialectReq(srv.Handler(), path, "application/json", []byte(`{"file":"`+b64+`"`+tc.json+`}`))
			}
			require.Equal(t, tc.want.status, w.Code, w.Body.String())
			if tc.want.ctype != "" {
				require.Equal(t, tc.want.ctype, w.Header().Get("Content-Type"))
			}
			if tc.want.body != "" {
				require.Equal(t, tc.want.body, w.Body.String())
			}
			for _, c := range tc.want.contains {
				require.Contains(t, w.Body.String(), c)
			}
			if tc.want.status != 200 {
				return
			}
			req := f.last.(*runners.AudioRequest)
			require.Equal(t, tc.want.temps, req.Decode.Temperatures)
			got := [3]*float64{req.Decode.CompressionRatioThreshold, req.Decode.LogprobThreshold, req.Decode.NoSpeechThreshold}
			require.Equal(t, tc.want.thresholds, got)
			require.Equal(t, tc.want.prompt, req.Prompt)
			require.Equal(t, "en", req.Language, "AUDIO_LANGUAGE=English")
		})
	}
}

func TestAudioTaskSetting(t *testing.T) {
	wav := testWAV(16000, 16000)
	body := []byte(`{"file":"` + base64.StdEncoding.EncodeToString(wav) + `"}`)
	// AUDIO_TASK=translate mounts the legacy /audio/translations (not /audio/transcriptions),
	// whose Python requests translate; AUDIO_LANGUAGE names the language.
	f, srv := headAudioServer(t, "German", "translate")
	h := srv.Handler()
	w := dialectReq(h, "/audio/translations", "application/json", body)
	require.Equal(t, 200, w.Code, w.Body.String())
	require.Equal(t, "translate", f.last.(*runners.AudioRequest).Task)
	require.Equal(t, "de", f.last.(*runners.AudioRequest).Language)
	require.Equal(t, "</v1/audio/translations>; rel=\"successor-version\"", w.Header().Get("Link"))
	w = dialectReq(h, "/audio/transcriptions", "application/json", body)
	require.Equal(t, 404, w.Code)
	// The /v1 routes both exist; a Python request's task is the route's.
	w = dialectReq(h, "/v1/audio/transcriptions", "application/json", body)
	require.Equal(t, 200, w.Code, w.Body.String())
	require.Empty(t, f.last.(*runners.AudioRequest).Task)

	_, srv = headAudioServer(t, "English", "transcribe")
	w = dialectReq(srv.Handler(), "/audio/translations", "application/json", body)
	require.Equal(t, 404, w.Code)
	var m map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &m))
	require.True(t, strings.Contains(w.Body.String(), "Not Found"))
}
