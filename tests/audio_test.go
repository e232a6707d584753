package tests

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const audioPath = "/audio/transcriptions"

// transcription is the final JSON object of a transcription.
type transcription struct {
	Text     string  `json:"text"`
	Task     string  `json:"task"`
	Language string  `json:"language"`
	Duration float64 `json:"duration"`
	Segments []struct {
		ID        int     `json:"id"`
		Speaker   string  `json:"speaker"`
		StartTime float64 `json:"start_time"`
		EndTime   float64 `json:"end_time"`
		Text      string  `json:"text"`
	} `json:"segments"`
	SpeakerCount int      `json:"speaker_count"`
	Speakers     []string `json:"speakers"`
}

// requireTranscription checks the fields every transcription has.
func requireTranscription(t *testing.T, tr transcription, wantDuration, tol float64) {
	t.Helper()
	require.NotEmpty(t, strings.TrimSpace(tr.Text), "empty transcription text")
	require.Equal(t, "transcribe", tr.Task)
	require.Equal(t, "english", tr.Language)
	require.InDeltaf(t, wantDuration, tr.Duration, tol, "duration")
}

// requireSegments checks diarized segments: ordered, non-empty, inside [0, duration], one speaker.
func requireSegments(t *testing.T, tr transcription) {
	t.Helper()
	require.NotEmpty(t, tr.Segments, "no segments with pre-processing on")
	require.Equal(t, []string{"SPEAKER_00"}, tr.Speakers)
	prevEnd := 0.0
	for i, seg := range tr.Segments {
		require.Lessf(t, seg.StartTime, seg.EndTime, "segment %d: start >= end", i)
		require.GreaterOrEqualf(t, seg.StartTime, 0.0, "segment %d starts before 0", i)
		require.LessOrEqualf(t, seg.EndTime, tr.Duration+1e-3, "segment %d ends after the audio", i)
		require.GreaterOrEqualf(t, seg.StartTime, prevEnd-1e-3, "segment %d starts before segment %d ends", i, i-1)
		require.Equal(t, "SPEAKER_00", seg.Speaker)
		require.NotEmpty(t, seg.Text)
		prevEnd = seg.EndTime
	}
}

// chunkLine is the Python server's stream chunk line: json.dumps({"text": ..., "chunk_id": n}).
var chunkLine = regexp.MustCompile(`^\{"text": "(?:[^"\\]|\\.)*", "chunk_id": [0-9]+\}$`)

// parseStream checks a streamed answer line by line and returns the final object.
func parseStream(t *testing.T, r reply) transcription {
	t.Helper()
	require.Equalf(t, http.StatusOK, r.Status, "%s", r)
	require.Equal(t, "application/x-ndjson", strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
	lines := ndjsonLines(t, r.Body)
	require.GreaterOrEqual(t, len(lines), 2, "want chunk lines and a final line, got %q", lines)
	for i, line := range lines[:len(lines)-1] {
		require.Regexpf(t, chunkLine, line, "line %d is not a Python json.dumps chunk line", i+1)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "line %d", i+1)
		require.Len(t, m, 2, "line %d: %s", i+1, line)
		text, ok := m["text"].(string)
		require.True(t, ok)
		require.NotEmpty(t, text, "line %d: empty chunk text", i+1)
		require.Equalf(t, float64(i+1), m["chunk_id"], "line %d: chunk ids must count 1, 2, 3, ...", i+1)
	}
	last := lines[len(lines)-1]
	require.NotContains(t, last, `"chunk_id"`, "the stream has no final object")
	var tr transcription
	require.NoError(t, json.Unmarshal([]byte(last), &tr), "final line: %s", last)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(last), &m))
	require.NotContains(t, m, "detail", "the stream ended with an error: %s", last)
	return tr
}

// audioManifest is /work/shared/testdata/audio/manifest.json.
type audioManifest struct {
	DurationLimit float64 `json:"duration_limit_s"`
	Files         []struct {
		File         string   `json:"file"`
		Expected     string   `json:"expected"`
		Container    string   `json:"container"`
		DurationS    *float64 `json:"duration_s"`
		RejectReason string   `json:"reject_reason"`
	} `json:"files"`
}

func loadAudioManifest(t *testing.T) (string, audioManifest) {
	t.Helper()
	dir := testdataDir(t, "audio")
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Skipf("audio manifest unreadable (%v); skipping", err)
	}
	var m audioManifest
	require.NoError(t, json.Unmarshal(data, &m))
	require.NotEmpty(t, m.Files)
	return dir, m
}

func contentTypeFor(name string) string {
	if strings.HasSuffix(name, ".mp3") {
		return "audio/mpeg"
	}
	return "audio/wav"
}

// toneGapTone is 1 s of tone, 1 s of silence, 1 s of tone at 16 kHz.
func toneGapTone() []byte {
	const rate = 16000
	return wavPCM16(rate, concat(tone(rate, 1, 440, 0.5), silence(rate, 1), tone(rate, 1, 660, 0.5)))
}

func TestAudio(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-whisper"})
	wav3s := toneGapTone()

	t.Run("JSON base64 request", func(t *testing.T) {
		body := fmt.Sprintf(`{"stream":false,"file":"%s"}`, base64.StdEncoding.EncodeToString(wav3s))
		r := s.postJSON(t, audioPath, body)
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		require.Contains(t, r.Header.Get("Content-Type"), "application/json")
		var tr transcription
		r.JSON(t, &tr)
		requireTranscription(t, tr, 3.0, 1e-3)
	})

	t.Run("JSON stream true", func(t *testing.T) {
		body := fmt.Sprintf(`{"stream":true,"file":"%s"}`, base64.StdEncoding.EncodeToString(wav3s))
		tr := parseStream(t, s.postJSON(t, audioPath, body))
		requireTranscription(t, tr, 3.0, 1e-3)
	})

	t.Run("multipart stream with pre-processing finds the two tones", func(t *testing.T) {
		r := s.postMultipart(t, audioPath, file("x.wav", "audio/wav", wav3s),
			field("stream", "true"), field("is_preprocessing_enabled", "true"))
		tr := parseStream(t, r)
		requireTranscription(t, tr, 3.0, 1e-3)
		requireSegments(t, tr)
		require.Lenf(t, tr.Segments, 2, "segments %+v", tr.Segments)
		want := [][2]float64{{0, 1}, {2, 3}}
		for i, seg := range tr.Segments {
			require.InDeltaf(t, want[i][0], seg.StartTime, 0.1, "segment %d start", i)
			require.InDeltaf(t, want[i][1], seg.EndTime, 0.1, "segment %d end", i)
		}
	})

	t.Run("multipart without streaming", func(t *testing.T) {
		r := s.postMultipart(t, audioPath, file("x.wav", "audio/wav", wav3s), field("stream", "false"))
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		require.Contains(t, r.Header.Get("Content-Type"), "application/json")
		var tr transcription
		r.JSON(t, &tr)
		requireTranscription(t, tr, 3.0, 1e-3)
		requireSegments(t, tr) // pre-processing is on by default
	})

	t.Run("pre-processing off gives no segments", func(t *testing.T) {
		r := s.postMultipart(t, audioPath, file("x.wav", "audio/wav", wav3s),
			field("stream", "false"), field("is_preprocessing_enabled", "false"))
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		var tr transcription
		r.JSON(t, &tr)
		requireTranscription(t, tr, 3.0, 1e-3)
		require.Empty(t, tr.Segments)
	})

	long := wavPCM16(16000, tone(16000, 65, 300, 0.3))
	t.Run("65 s without pre-processing is over the 60 s limit", func(t *testing.T) {
		r := s.postMultipart(t, audioPath, file("long.wav", "audio/wav", long),
			field("stream", "false"), field("is_preprocessing_enabled", "false"))
		require.Equalf(t, http.StatusBadRequest, r.Status, "%s", r)
		detail, _ := r.obj(t)["detail"].(string)
		require.Regexp(t, `\b60(\.0+)?\b`, detail, "the error must name the 60 s limit")
	})
	t.Run("65 s with pre-processing is under the 300 s limit", func(t *testing.T) {
		r := s.postMultipart(t, audioPath, file("long.wav", "audio/wav", long),
			field("stream", "false"), field("is_preprocessing_enabled", "true"))
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		var tr transcription
		r.JSON(t, &tr)
		requireTranscription(t, tr, 65, 1e-3)
		requireSegments(t, tr)
	})

	t.Run("301 s with pre-processing is over the 300 s limit", func(t *testing.T) {
		const rate = 8000 // keeps the upload at 4.8 MB
		over := wavPCM16(rate, tone(rate, 301, 300, 0.3))
		r := s.postMultipart(t, audioPath, file("over.wav", "audio/wav", over),
			field("stream", "false"), field("is_preprocessing_enabled", "true"))
		require.Equalf(t, http.StatusBadRequest, r.Status, "%s", r)
		detail, _ := r.obj(t)["detail"].(string)
		require.Regexp(t, `\b300(\.0+)?\b`, detail, "the error must name the 300 s limit")
	})

	half := wav3s[:len(wav3s)/2]
	bad := []struct {
		name       string
		part       formPart
		wantStatus int
	}{
		{"text renamed .mp3", file("notes.mp3", "audio/mpeg", []byte("These are meeting notes, not audio at all.\n")), http.StatusUnsupportedMediaType},
		{"empty file", file("empty.wav", "audio/wav", []byte{}), http.StatusBadRequest},
		{"truncated WAV", file("half.wav", "audio/wav", half), http.StatusBadRequest},
		{"WAV header only", file("hdr.wav", "audio/wav", wav3s[:44-4]), http.StatusBadRequest},
	}
	for _, tc := range bad {
		t.Run("bad input/"+tc.name, func(t *testing.T) {
			r := s.postMultipart(t, audioPath, tc.part, field("stream", "false"))
			require.Equalf(t, tc.wantStatus, r.Status, "%s", r)
			detail, ok := r.obj(t)["detail"].(string)
			require.Truef(t, ok, "detail is not a string: %s", r)
			require.NotEmpty(t, detail)
		})
	}

	t.Run("bad input/streamed bad file is an error status, not a 200 stream", func(t *testing.T) {
		r := s.postMultipart(t, audioPath, file("half.wav", "audio/wav", half), field("stream", "true"))
		require.Equalf(t, http.StatusBadRequest, r.Status, "%s", r)
	})

	t.Run("bad input/text/plain content type", func(t *testing.T) {
		r := do(t, http.MethodPost, s.URL+audioPath, []byte("hello"), "Content-Type", "text/plain", "Authorization", bearer)
		require.Equalf(t, http.StatusBadRequest, r.Status, "%s", r)
		detail, _ := r.obj(t)["detail"].(string)
		require.True(t, strings.HasPrefix(detail, "Use either multipart/form-data"), "detail %q", detail)
	})

	t.Run("bad input/JSON without file", func(t *testing.T) {
		it := validationItem(t, s.postJSON(t, audioPath, `{"stream":false}`))
		require.Equal(t, "missing", it["type"])
		require.Equal(t, []any{"body", "file"}, it["loc"])
	})

	t.Run("shared test data", func(t *testing.T) {
		dir, m := loadAudioManifest(t)
		for _, f := range m.Files {
			t.Run(f.File, func(t *testing.T) {
				data, err := os.ReadFile(filepath.Join(dir, f.File))
				require.NoError(t, err)
				// The manifest's verdicts are for the 60 s limit, i.e. pre-processing off.
				r := s.postMultipart(t, audioPath, file(f.File, contentTypeFor(f.File), data),
					field("stream", "false"), field("is_preprocessing_enabled", "false"))
				switch f.Expected {
				case "ok":
					require.Equalf(t, http.StatusOK, r.Status, "%s", r)
					var tr transcription
					r.JSON(t, &tr)
					require.NotNil(t, f.DurationS)
					tol := 0.01
					if f.Container == "mp3" {
						tol = 0.06 // one MP3 frame; decoders differ in gapless trimming
					}
					requireTranscription(t, tr, *f.DurationS, tol)
				case "reject":
					require.GreaterOrEqualf(t, r.Status, 400, "%s", r)
					require.Lessf(t, r.Status, 500, "a bad file must be a client error: %s", r)
					switch {
					case strings.HasSuffix(f.File, ".mp3") && strings.Contains(f.RejectReason, "not audio"):
						require.Equal(t, http.StatusUnsupportedMediaType, r.Status)
					case strings.Contains(f.RejectReason, "limit"):
						require.Equal(t, http.StatusBadRequest, r.Status)
						require.Contains(t, string(r.Body), fmt.Sprint(m.DurationLimit))
					case f.RejectReason == "empty file" || strings.HasPrefix(f.RejectReason, "truncated"):
						require.Equal(t, http.StatusBadRequest, r.Status)
					}
				default:
					t.Fatalf("unknown expected %q", f.Expected)
				}
			})
		}
	})

	t.Run("shared test data streamed with pre-processing", func(t *testing.T) {
		dir, m := loadAudioManifest(t)
		for _, f := range m.Files {
			if f.Expected != "ok" || !strings.HasPrefix(f.File, "speech_b") {
				continue
			}
			t.Run(f.File, func(t *testing.T) {
				data, err := os.ReadFile(filepath.Join(dir, f.File))
				require.NoError(t, err)
				r := s.postMultipart(t, audioPath, file(f.File, contentTypeFor(f.File), data),
					field("stream", "true"), field("is_preprocessing_enabled", "true"))
				tr := parseStream(t, r)
				tol := 0.01
				if f.Container == "mp3" {
					tol = 0.06
				}
				requireTranscription(t, tr, *f.DurationS, tol)
				requireSegments(t, tr)
			})
		}
	})

	t.Run("65 s shared file with pre-processing is accepted", func(t *testing.T) {
		dir := testdataDir(t, "audio")
		data, err := os.ReadFile(filepath.Join(dir, "long_65s_16k_s16_mono.wav"))
		if err != nil {
			t.Skipf("long_65s_16k_s16_mono.wav unreadable: %v", err)
		}
		r := s.postMultipart(t, audioPath, file("long.wav", "audio/wav", data), field("stream", "false"))
		require.Equalf(t, http.StatusOK, r.Status, "%s", r)
		var tr transcription
		r.JSON(t, &tr)
		requireTranscription(t, tr, 65, 0.01)
		requireSegments(t, tr)
	})
}

func TestAudioSizeLimit(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-whisper", "MAX_AUDIO_SIZE_BYTES": "20000", "MOCK_DEVICES_COUNT": "1"})
	big := wavPCM16(16000, tone(16000, 1, 440, 0.5)) // 32 044 bytes
	small := wavPCM16(16000, tone(16000, 0.5, 440, 0.5))

	r := s.postMultipart(t, audioPath, file("big.wav", "audio/wav", big), field("stream", "false"))
	require.Equalf(t, http.StatusRequestEntityTooLarge, r.Status, "multipart: %s", r)
	require.NotEmpty(t, r.obj(t)["detail"])

	r = s.postJSON(t, audioPath, fmt.Sprintf(`{"file":"%s"}`, base64.StdEncoding.EncodeToString(big)))
	require.Equalf(t, http.StatusRequestEntityTooLarge, r.Status, "JSON: %s", r)

	r = s.postMultipart(t, audioPath, file("small.wav", "audio/wav", small), field("stream", "false"))
	require.Equalf(t, http.StatusOK, r.Status, "a file under the limit: %s", r)
	var tr transcription
	r.JSON(t, &tr)
	require.InDelta(t, 0.5, tr.Duration, 1e-3)
	require.False(t, math.IsNaN(tr.Duration))
}

// TestAudioStreamsIncrementally checks that stream lines leave the server as they are made
// (what curl --no-buffer shows), not all at once at the end.
func TestAudioStreamsIncrementally(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-whisper", "MOCK_DEVICES_COUNT": "1", "MOCK_AUDIO_SECONDS_PER_SECOND": "0.2"})
	ct, body := multipartBody(t, file("x.wav", "audio/wav", toneGapTone()), field("stream", "true"))
	req, err := http.NewRequest(http.MethodPost, s.URL+audioPath, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", bearer)
	start := time.Now()
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	rd := bufio.NewReader(resp.Body)
	var raw bytes.Buffer
	var firstAt time.Duration
	for {
		line, err := rd.ReadBytes('\n')
		if len(line) > 0 && firstAt == 0 {
			firstAt = time.Since(start)
		}
		raw.Write(line)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
	}
	total := time.Since(start)
	tr := parseStream(t, reply{Status: resp.StatusCode, Header: resp.Header, Body: raw.Bytes()})
	requireTranscription(t, tr, 3.0, 1e-3)
	// 3 s of audio at 0.2 s per second is 0.6 s of simulated work, paced across the chunks.
	require.Greater(t, total, 500*time.Millisecond)
	require.Lessf(t, firstAt, total-300*time.Millisecond, "first line after %v, end after %v: the stream is buffered", firstAt, total)
}
