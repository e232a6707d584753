package server

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/tenstorrent/tt-media-server-go/media/audioenc"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/speecht5/voices"
)

// maxSpeechText is HEAD's DEFAULT_MAX_TTS_TEXT_LENGTH (OpenAI's limit, 4096, is in
// openAISpeechParams).
const maxSpeechText = 20000

// pythonSpeechFormats are HEAD's TTS_RESPONSE_FORMATS (OpenAI's are in openAISpeechParams).
var pythonSpeechFormats = []string{"wav", "mp3", "ogg", "json", "verbose_json"}

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

// openAISpeechParams is OpenAI's CreateSpeechRequest, declared: the field names, their
// constraints and the answer to each refusal (decodeOpenAI). instructions are refused (SpeechT5
// takes none); speed is honoured by a pitch-preserving time stretch of the audio (media/tempo,
// whose MinSpeed and MaxSpeed the tag repeats: TestOpenAISpeechTagsMatchLimits).
type openAISpeechParams struct {
	Model *string `json:"model" validate:"required" msg.required:"Missing required parameter: 'model'." msg.type:"Invalid type for 'model': expected a string."`
	Input *string `json:"input" validate:"required,nonblank,max=4096" msg.required:"Missing required parameter: 'input'." msg.type:"Invalid type for 'input': expected a string." msg.nonblank:"'input' is empty: give the text to speak." msg.max:"'input' is %d characters long; the limit is 4096."`
	// voice is checked against the speaker table after decoding (openAIVoiceName.resolve).
	Voice          *openAIVoiceName `json:"voice" validate:"required" msg.required:"Missing required parameter: 'voice'."`
	Instructions   *string          `json:"instructions" validate:"omitnil,blank" msg:"'instructions' is not supported: SpeechT5 speaks the text as it is and takes no instructions; leave it out." msg.type:"Invalid type for 'instructions': expected a string."`
	ResponseFormat *string          `json:"response_format" validate:"omitnil,oneof=mp3 opus aac flac wav pcm" msg:"'response_format' must be one of mp3, opus, aac, flac, wav, pcm, got %q." msg.type:"Invalid type for 'response_format': expected a string."`
	Speed          *float64         `json:"speed" validate:"omitnil,min=0.25,max=4" msg:"'speed' must be between 0.25 and 4, got %g." msg.type:"Invalid type for 'speed': expected a number between 0.25 and 4."`
	StreamFormat   *string          `json:"stream_format" validate:"omitnil,oneof=audio sse" msg:"'stream_format' must be \"audio\" or \"sse\", got %q." msg.type:"Invalid type for 'stream_format': expected a string."`
}

// parseOpenAISpeech reads OpenAI's CreateSpeechRequest (data, already decoded as b): every
// field is honoured or refused with a 400 naming it.
func parseOpenAISpeech(data []byte, b *body, models *modelTable, table *voices.Table) (*speechJob, error) {
	if k, ok := undeclared(b.raw, reflect.TypeFor[openAISpeechParams]()); ok {
		return nil, invalidParam(k, "Unrecognized request argument supplied: %s", k)
	}
	var p openAISpeechParams
	if err := decodeOpenAI(data, &p); err != nil {
		return nil, err
	}
	if err := models.resolve(*p.Model); err != nil {
		return nil, err
	}
	job := &speechJob{req: &runners.SpeechRequest{Text: *p.Input, Stream: true}, format: audioenc.MP3, speed: 1}
	voice, err := p.Voice.resolve(table)
	if err != nil {
		return nil, err
	}
	job.req.SpeakerID = voice
	if p.ResponseFormat != nil {
		job.format = *p.ResponseFormat
	}
	if err := audioenc.Check(job.format); err != nil {
		return nil, &apiError{status: 400, param: "response_format", code: "unsupported_response_format",
			msg: fmt.Sprintf("response_format %q cannot be encoded on this server: %v", job.format, err)}
	}
	if p.Speed != nil {
		job.speed = *p.Speed
	}
	job.sse = p.StreamFormat != nil && *p.StreamFormat == "sse"
	return job, nil
}

// openAIVoiceName is OpenAI's voice as sent: a name ("alloy", or a speaker id of the table) or
// an object {"id": name}.
type openAIVoiceName string

func (v *openAIVoiceName) UnmarshalJSON(raw []byte) error {
	var name string
	if json.Unmarshal(raw, &name) != nil {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			return invalidParam("voice", "Invalid type for 'voice': expected a voice name or an object {\"id\": ...}.")
		}
		for k := range obj {
			if k != "id" {
				return invalidParam("voice", "Unrecognized field 'voice.%s': a custom voice is {\"id\": ...}.", k)
			}
		}
		if json.Unmarshal(obj["id"], &name) != nil {
			return invalidParam("voice", "Invalid type for 'voice.id': expected a string.")
		}
	}
	*v = openAIVoiceName(name)
	return nil
}

// resolve is the table's speaker id for the voice.
func (v openAIVoiceName) resolve(table *voices.Table) (string, error) {
	id, err := table.Voice(string(v))
	if err != nil {
		if errors.Is(err, voices.ErrUnknownSpeaker) {
			names := make([]string, 0, len(voices.OpenAI))
			for n := range voices.OpenAI {
				names = append(names, n)
			}
			sort.Strings(names)
			return "", invalidParam("voice", "Unknown voice %q: use one of %s, or a speaker id of GET /v1/audio/voices.", shorten(string(v)), strings.Join(names, ", "))
		}
		return "", err
	}
	return id, nil
}

func sortStrings(s []string) { sort.Strings(s) }
