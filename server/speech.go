package server

// Text-to-speech: POST /v1/audio/speech in both dialects (HEAD's TextToSpeechRequest and
// OpenAI's CreateSpeechRequest), the legacy POST /audio/speech (Python dialect only, with the
// deprecation headers), and GET /v1/audio/voices. Parsing is in speech_parse.go, the writers in
// speech_write.go. HEAD's answers are whole files (its clients read a WAV with exact sizes) or
// its JSON; OpenAI's binary answers stream: each text chunk's audio is encoded and flushed as
// soon as the runner has vocoded it, and stream_format "sse" sends the same bytes as
// speech.audio.delta events, then speech.audio.done with the usage.

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/tenstorrent/tt-media-server-go/media/audioenc"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/speecht5/voices"
)

// speechPath is the /v1 route; legacySpeechPath its deprecated twin.
const (
	speechPath       = "/v1/audio/speech"
	legacySpeechPath = "/audio/speech"
)

// speechRule tells HEAD's TextToSpeechRequest from OpenAI's CreateSpeechRequest: response_format
// is shared; a body with neither list's fields is HEAD's (its route's default).
var speechRule = dialectRule{
	python:   []string{"text", "speaker_id", "speaker_embedding"},
	openai:   []string{"model", "input", "voice", "instructions", "speed", "stream_format"},
	fallback: dialectPython,
}

// speechState is what the speech routes share: the speaker table the runner uses.
type speechState struct {
	voices *voices.Table
	// loadErr is a speaker table that could not be read: every request is answered with it.
	loadErr error
}

// speechRoutes mounts the legacy route on r; the /v1 routes are mounted by speechOpenAIRoutes.
func (s *Server) speechRoutes(r *gin.Engine, authed, limited, deadline gin.HandlerFunc) {
	s.initSpeech()
	r.POST(legacySpeechPath, deprecated(speechPath), authed, limited, deadline, s.limitBody(maxJSONBody, dialectPython),
		s.inference(inferenceRoute{rule: &speechRule, successor: speechPath, handle: s.handleSpeech(nil)}))
}

// speechOpenAIRoutes mounts POST /v1/audio/speech (both dialects) and GET /v1/audio/voices on g.
func (s *Server) speechOpenAIRoutes(g *gin.RouterGroup, models *modelTable, auth, limited, deadline gin.HandlerFunc) {
	s.initSpeech()
	g.POST("/audio/speech", auth, limited, deadline, s.limitBody(maxJSONBody, dialectOpenAI),
		s.inference(inferenceRoute{rule: &speechRule, handle: s.handleSpeech(models)}))
	g.GET("/audio/voices", auth, s.handleVoices)
}

func (s *Server) initSpeech() {
	if s.speech != nil {
		return
	}
	t, err := voices.ForWeights(s.speechWeights())
	s.speech = &speechState{voices: t, loadErr: err}
}

// speechWeights is the weights directory of the speech pool's model.
func (s *Server) speechWeights() string {
	if p := s.pool(runners.ServiceTextToSpeech); p != nil && p.Runner != s.cfg.ModelRunner {
		return "" // a MODEL_POOLS pool other than the main model: no MODEL_WEIGHTS_PATH of its own
	}
	return s.cfg.ModelWeightsPath
}

// voiceEntry is one speaker of GET /v1/audio/voices.
type voiceEntry struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Aliases []string `json:"aliases,omitempty"`
	Default bool     `json:"default,omitempty"`
}

// handleVoices lists the speaker table: every speaker id, the OpenAI voice names that map to
// it, and the default speaker.
func (s *Server) handleVoices(c *gin.Context) {
	if s.speech.loadErr != nil {
		s.fail(c, dialectOpenAI, s.speech.loadErr)
		return
	}
	t := s.speech.voices
	aliases := map[string][]string{}
	for name, id := range voices.OpenAI {
		if t.Has(id) {
			aliases[id] = append(aliases[id], name)
		}
	}
	data := make([]voiceEntry, 0, t.Len())
	for _, id := range t.IDs() {
		a := aliases[id]
		sortStrings(a)
		data = append(data, voiceEntry{ID: id, Object: "voice", Aliases: a, Default: id == t.DefaultID()})
	}
	writeJSON(c, http.StatusOK, gin.H{"object": "list", "data": data, "default": t.DefaultID(),
		"source": t.Source, "formats": audioenc.Available()})
}
