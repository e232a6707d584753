package tests

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// What browsers' MediaRecorder (Chrome/Firefox: WebM/Opus; Safari: MP4/AAC) and phones (M4A)
// upload, on both transcription routes of the real binary: the right duration (±0.1 s), broken
// files a 400 naming the problem, and without ffmpeg a 415 naming it. The fixtures are
// media/audio/testdata/browser (scripts/gen-audio-fixtures.sh).

type browserFixture struct {
	File         string `json:"file"`
	SourceRate   int    `json:"source_rate"`
	SourceFrames int    `json:"source_frames"`
}

func browserFixtures(t *testing.T) (string, []browserFixture) {
	t.Helper()
	dir := filepath.Join(repoRoot, "media", "audio", "testdata", "browser")
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	var m struct{ Files []browserFixture }
	require.NoError(t, json.Unmarshal(raw, &m))
	require.Len(t, m.Files, 6)
	return dir, m.Files
}

// browserContentType is what a browser sends for the file.
func browserContentType(name string) string {
	switch filepath.Ext(name) {
	case ".webm":
		return "audio/webm;codecs=opus"
	case ".m4a":
		return "audio/x-m4a"
	}
	return "audio/mp4"
}

// transcribeBoth posts data to both routes and returns (status, duration or error text) of each.
func transcribeBoth(t *testing.T, s *server, name string, data []byte) (ref, oai reply) {
	t.Helper()
	ref = s.postMultipart(t, audioPath, file(name, browserContentType(name), data),
		field("stream", "false"), field("is_preprocessing_enabled", "false"))
	oai = s.postMultipart(t, "/v1/audio/transcriptions", file(name, browserContentType(name), data),
		field("model", "whisper-1"), field("response_format", "verbose_json"))
	return ref, oai
}

func TestAudioBrowserFormats(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg is not installed: M4A/MP4 (AAC) decodes through it (.ci/run installs it)")
	}
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-whisper"})
	dir, fixtures := browserFixtures(t)
	for _, f := range fixtures {
		t.Run(f.File, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, f.File))
			require.NoError(t, err)
			want := float64(f.SourceFrames) / float64(f.SourceRate)
			ref, oai := transcribeBoth(t, s, f.File, data)
			for _, r := range []reply{ref, oai} {
				require.Equalf(t, http.StatusOK, r.Status, "%s", r)
				var tr struct {
					Duration float64 `json:"duration"`
					Text     string  `json:"text"`
				}
				r.JSON(t, &tr)
				require.InDeltaf(t, want, tr.Duration, 0.1, "duration of %s", f.File)
				require.NotEmpty(t, tr.Text)
			}
		})
	}

	webm, err := os.ReadFile(filepath.Join(dir, "webm_opus_48k_mono_32k.webm"))
	require.NoError(t, err)
	m4a, err := os.ReadFile(filepath.Join(dir, "m4a_aac_44k1_stereo_96k.m4a"))
	require.NoError(t, err)
	moov := strings.Index(string(m4a), "moov")
	for _, tc := range []struct {
		name string
		data []byte
		msg  string
	}{
		{"recording.webm", webm[:len(webm)/2], "WebM file is truncated"},
		{"recording.m4a", m4a[:moov-4], "MP4 file has no movie box (moov)"},
	} {
		t.Run("broken "+tc.name, func(t *testing.T) {
			ref, oai := transcribeBoth(t, s, tc.name, tc.data)
			require.Equalf(t, http.StatusBadRequest, ref.Status, "%s", ref)
			require.Contains(t, ref.obj(t)["detail"], tc.msg)
			require.Equalf(t, http.StatusBadRequest, oai.Status, "%s", oai)
			e, _ := oai.obj(t)["error"].(map[string]any)
			require.Contains(t, e["message"], tc.msg)
		})
	}
}

// TestAudioBrowserWithoutFFmpeg: a server whose PATH has no ffmpeg still decodes WebM/Opus (pure
// Go) and answers M4A with a message that names ffmpeg as what is missing: 415 on the reference
// route, 400 with param "file" on /v1 (as OpenAI answers an unsupported file).
func TestAudioBrowserWithoutFFmpeg(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-whisper", "PATH": t.TempDir()})
	dir, _ := browserFixtures(t)
	webm, err := os.ReadFile(filepath.Join(dir, "webm_opus_48k_mono_32k.webm"))
	require.NoError(t, err)
	ref, oai := transcribeBoth(t, s, "recording.webm", webm)
	require.Equalf(t, http.StatusOK, ref.Status, "%s", ref)
	require.Equalf(t, http.StatusOK, oai.Status, "%s", oai)
	m4a, err := os.ReadFile(filepath.Join(dir, "m4a_aac_44k1_stereo_96k.m4a"))
	require.NoError(t, err)
	ref, oai = transcribeBoth(t, s, "recording.m4a", m4a)
	const msg = "M4A/MP4 (AAC) needs the ffmpeg program to decode, and it is not installed on this server"
	require.Equalf(t, http.StatusUnsupportedMediaType, ref.Status, "%s", ref)
	require.Contains(t, ref.obj(t)["detail"], msg)
	require.Equalf(t, http.StatusBadRequest, oai.Status, "%s", oai)
	e, _ := oai.obj(t)["error"].(map[string]any)
	require.Contains(t, e["message"], msg)
	require.Equal(t, "file", e["param"])
}
