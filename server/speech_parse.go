package server

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/tenstorrent/tt-media-server-go/media/audioenc"
	"github.com/tenstorrent/tt-media-server-go/media/tempo"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/speecht5/voices"
)

// Limits of the two dialects' texts: HEAD's DEFAULT_MAX_TTS_TEXT_LENGTH and OpenAI's input.
const (
	maxSpeechText      = 20000
	maxOpenAISpeechLen = 4096
)

// Formats of each dialect: HEAD's TTS_RESPONSE_FORMATS and OpenAI's response_format.
var (
	pythonSpeechFormats = []string{"wav", "mp3", "ogg", "json", "verbose_json"}
	openAISpeechFormats = []string{"mp3", "opus", "aac", "flac", "wav", "pcm"}
)

// speechJob is a parsed speech request.
type speechJob struct {
	req *runners.SpeechRequest
	// format is the audio encoding (audioenc); json answers HEAD's JSON with base64 WAV.
	format string
	json   bool
	// sse: OpenAI's stream_format "sse".
	sse bool
	// speed is OpenAI's speed (1 when not given): a pitch-preserving time stretch (media/tempo).
	speed float64
}

var pythonSpeechFields = []string{"text", "speaker_id", "speaker_embedding", "response_format"}

// parsePythonSpeech reads HEAD's TextToSpeechRequest: 422s in FastAPI's shape for the fields
// pydantic checks, 422 naming the field for a speaker the table does not have, an embedding
// that is not 512 finite float32, or both a speaker_id and an embedding (HEAD silently uses the
// embedding).
func parsePythonSpeech(b *body, table *voices.Table) (*speechJob, error) {
	b.forbidExtra(pythonSpeechFields)
	job := &speechJob{req: &runners.SpeechRequest{}, format: audioenc.WAV}
	if v, present := b.value("text"); !present {
		b.missing("text")
	} else if text, ok := v.(string); !ok {
		b.add("value_error", []any{"text"}, "Value error, Text must be a string", v, nil)
	} else if strings.TrimSpace(text) == "" {
		b.add("value_error", []any{"text"}, "Value error, Text cannot be empty", text, nil)
	} else if n := utf8.RuneCountInString(text); n > maxSpeechText {
		b.add("value_error", []any{"text"}, fmt.Sprintf("Value error, Text exceeds maximum length of %d characters. Received %d characters.", maxSpeechText, n), shorten(text), nil)
	} else {
		job.req.Text = text
	}
	if v, present := b.value("response_format"); present && v != nil {
		f := strings.ToLower(strings.TrimSpace(fmt.Sprint(v)))
		if !slices.Contains(pythonSpeechFormats, f) {
			sorted := slices.Clone(pythonSpeechFormats)
			sort.Strings(sorted)
			b.add("value_error", []any{"response_format"}, fmt.Sprintf("Value error, response_format must be one of %s", pyList(sorted)), v, nil)
		} else if f == "json" || f == "verbose_json" {
			job.json = true
		} else {
			job.format = f
		}
	}
	id, hasID := b.str("speaker_id", false)
	emb, hasEmb := b.str("speaker_embedding", false)
	switch {
	case hasID && hasEmb && id != "" && emb != "":
		b.add("value_error", []any{"speaker_embedding"}, "Value error, give speaker_id or speaker_embedding, not both", shorten(emb), nil)
	case hasEmb && emb != "":
		vec, err := decodeEmbedding(emb)
		if err != nil {
			b.add("value_error", []any{"speaker_embedding"}, "Value error, "+err.Error(), shorten(emb), nil)
		}
		job.req.Embedding = vec
	case hasID && id != "":
		if !table.Has(id) {
			b.add("value_error", []any{"speaker_id"}, fmt.Sprintf("Value error, speaker %q is not in the speaker table (%d speakers; GET /v1/audio/voices lists them)", shorten(id), table.Len()), id, nil)
		}
		job.req.SpeakerID = id
	}
	if err := b.err(); err != nil {
		return nil, err
	}
	if !job.json {
		if err := audioenc.Check(job.format); err != nil {
			return nil, httpErr(400, "response_format %q cannot be encoded on this server: %v", job.format, err)
		}
	}
	return job, nil
}

func pyList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = "'" + s + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// decodeEmbedding reads a base64 string of exactly 512 little-endian finite float32.
func decodeEmbedding(s string) ([]float32, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("speaker_embedding is not valid base64: %v", err)
	}
	want := 4 * runners.SpeechEmbeddingDim
	if len(raw) != want {
		if len(raw)%4 == 0 {
			return nil, fmt.Errorf("speaker_embedding holds %d float32, want exactly %d (%d bytes)", len(raw)/4, runners.SpeechEmbeddingDim, want)
		}
		return nil, fmt.Errorf("speaker_embedding holds %d bytes, want exactly %d (%d float32)", len(raw), want, runners.SpeechEmbeddingDim)
	}
	vec := make([]float32, runners.SpeechEmbeddingDim)
	for i := range vec {
		v := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("speaker_embedding value %d is %v", i, v)
		}
		vec[i] = v
	}
	return vec, nil
}

var openAISpeechFields = []string{"model", "input", "voice", "instructions", "response_format", "speed", "stream_format"}

// parseOpenAISpeech reads OpenAI's CreateSpeechRequest. Every field is honoured or refused
// with a 400 naming it: instructions are refused (SpeechT5 takes none); speed is honoured by a
// pitch-preserving time stretch of the audio (media/tempo).
func parseOpenAISpeech(b *body, models *modelTable, table *voices.Table) (*speechJob, error) {
	for k := range b.raw {
		if !slices.Contains(openAISpeechFields, k) {
			return nil, invalidParam(k, "Unrecognized request argument supplied: %s", k)
		}
	}
	str := func(name string, required bool) (string, bool, error) {
		r, ok := b.raw[name]
		if !ok || string(r) == "null" {
			if required {
				return "", false, invalidParam(name, "Missing required parameter: '%s'.", name)
			}
			return "", false, nil
		}
		var s string
		if json.Unmarshal(r, &s) != nil {
			return "", false, invalidParam(name, "Invalid type for '%s': expected a string.", name)
		}
		return s, true, nil
	}
	model, _, err := str("model", true)
	if err != nil {
		return nil, err
	}
	if err := models.resolve(model); err != nil {
		return nil, err
	}
	input, _, err := str("input", true)
	if err != nil {
		return nil, err
	}
	switch n := utf8.RuneCountInString(input); {
	case strings.TrimSpace(input) == "":
		return nil, invalidParam("input", "'input' is empty: give the text to speak.")
	case n > maxOpenAISpeechLen:
		return nil, invalidParam("input", "'input' is %d characters long; the limit is %d.", n, maxOpenAISpeechLen)
	}
	job := &speechJob{req: &runners.SpeechRequest{Text: input, Stream: true}, format: audioenc.MP3, speed: 1}
	voice, err := openAIVoice(b.raw["voice"], table)
	if err != nil {
		return nil, err
	}
	job.req.SpeakerID = voice
	if instr, ok, err := str("instructions", false); err != nil {
		return nil, err
	} else if ok && strings.TrimSpace(instr) != "" {
		return nil, invalidParam("instructions", "'instructions' is not supported: SpeechT5 speaks the text as it is and takes no instructions; leave it out.")
	}
	if f, ok, err := str("response_format", false); err != nil {
		return nil, err
	} else if ok {
		if !slices.Contains(openAISpeechFormats, f) {
			return nil, invalidParam("response_format", "'response_format' must be one of %s, got %q.", strings.Join(openAISpeechFormats, ", "), shorten(f))
		}
		job.format = f
	}
	if err := audioenc.Check(job.format); err != nil {
		return nil, &apiError{status: 400, param: "response_format", code: "unsupported_response_format",
			msg: fmt.Sprintf("response_format %q cannot be encoded on this server: %v", job.format, err)}
	}
	if r, ok := b.raw["speed"]; ok && string(r) != "null" {
		var speed float64
		if json.Unmarshal(r, &speed) != nil || math.IsNaN(speed) || math.IsInf(speed, 0) {
			return nil, invalidParam("speed", "Invalid type for 'speed': expected a number between 0.25 and 4.")
		}
		if speed < tempo.MinSpeed || speed > tempo.MaxSpeed {
			return nil, invalidParam("speed", "'speed' must be between 0.25 and 4, got %g.", speed)
		}
		job.speed = speed
	}
	if sf, ok, err := str("stream_format", false); err != nil {
		return nil, err
	} else if ok {
		switch sf {
		case "audio":
		case "sse":
			job.sse = true
		default:
			return nil, invalidParam("stream_format", "'stream_format' must be \"audio\" or \"sse\", got %q.", shorten(sf))
		}
	}
	return job, nil
}

// openAIVoice resolves OpenAI's voice: a name ("alloy", or a speaker id of the table) or an
// object {"id": name}.
func openAIVoice(raw json.RawMessage, table *voices.Table) (string, error) {
	if raw == nil || string(raw) == "null" {
		return "", invalidParam("voice", "Missing required parameter: 'voice'.")
	}
	var name string
	if json.Unmarshal(raw, &name) != nil {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			return "", invalidParam("voice", "Invalid type for 'voice': expected a voice name or an object {\"id\": ...}.")
		}
		for k := range obj {
			if k != "id" {
				return "", invalidParam("voice", "Unrecognized field 'voice.%s': a custom voice is {\"id\": ...}.", k)
			}
		}
		if json.Unmarshal(obj["id"], &name) != nil {
			return "", invalidParam("voice", "Invalid type for 'voice.id': expected a string.")
		}
	}
	id, err := table.Voice(name)
	if err != nil {
		if errors.Is(err, voices.ErrUnknownSpeaker) {
			names := make([]string, 0, len(voices.OpenAI))
			for n := range voices.OpenAI {
				names = append(names, n)
			}
			sort.Strings(names)
			return "", invalidParam("voice", "Unknown voice %q: use one of %s, or a speaker id of GET /v1/audio/voices.", shorten(name), strings.Join(names, ", "))
		}
		return "", err
	}
	return id, nil
}

func sortStrings(s []string) { sort.Strings(s) }
