package server

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/media/tempo"
)

// TestDecodeOpenAISpeechVideoParams: the declared speech and video parameters answer every
// refusal with the exact sentence the hand-written readers answered, param naming the field.
func TestDecodeOpenAISpeechVideoParams(t *testing.T) {
	const ok = `"model":"tts-1","input":"hi","voice":"alloy"`
	tests := []struct {
		name, body string
		dst        func() any
		param, msg string // param "" = accepted
	}{
		{"speech ok", `{` + ok + `,"speed":1,"stream_format":"sse","instructions":"  ","response_format":"wav"}`, newSpeechParams, "", ""},
		{"speech voice object", `{"model":"tts-1","input":"hi","voice":{"id":"speaker_0100"}}`, newSpeechParams, "", ""},
		{"speech nulls", `{` + ok + `,"speed":null,"instructions":null,"stream_format":null}`, newSpeechParams, "", ""},
		{"model missing", `{"input":"hi","voice":"alloy"}`, newSpeechParams, "model", "Missing required parameter: 'model'."},
		{"model null", `{"model":null,"input":"hi","voice":"alloy"}`, newSpeechParams, "model", "Missing required parameter: 'model'."},
		{"model a number", `{"model":1,"input":"hi","voice":"alloy"}`, newSpeechParams, "model", "Invalid type for 'model': expected a string."},
		{"input missing", `{"model":"tts-1","voice":"alloy"}`, newSpeechParams, "input", "Missing required parameter: 'input'."},
		{"input a list", `{"model":"tts-1","input":["a"],"voice":"alloy"}`, newSpeechParams, "input", "Invalid type for 'input': expected a string."},
		{"input blank", `{"model":"tts-1","input":" \n","voice":"alloy"}`, newSpeechParams, "input", "'input' is empty: give the text to speak."},
		{"input 4097 runes", `{"model":"tts-1","input":"` + strings.Repeat("é", 4097) + `","voice":"alloy"}`, newSpeechParams, "input", "'input' is 4097 characters long; the limit is 4096."},
		{"input 4096 runes", `{"model":"tts-1","input":"` + strings.Repeat("é", 4096) + `","voice":"alloy"}`, newSpeechParams, "", ""},
		{"voice missing", `{"model":"tts-1","input":"hi"}`, newSpeechParams, "voice", "Missing required parameter: 'voice'."},
		{"voice a number", `{"model":"tts-1","input":"hi","voice":3}`, newSpeechParams, "voice", `Invalid type for 'voice': expected a voice name or an object {"id": ...}.`},
		{"voice extra key", `{"model":"tts-1","input":"hi","voice":{"name":"x"}}`, newSpeechParams, "voice", `Unrecognized field 'voice.name': a custom voice is {"id": ...}.`},
		{"voice id missing", `{"model":"tts-1","input":"hi","voice":{}}`, newSpeechParams, "voice", "Invalid type for 'voice.id': expected a string."},
		{"instructions", `{` + ok + `,"instructions":"whisper"}`, newSpeechParams, "instructions", "'instructions' is not supported: SpeechT5 speaks the text as it is and takes no instructions; leave it out."},
		{"instructions a number", `{` + ok + `,"instructions":1}`, newSpeechParams, "instructions", "Invalid type for 'instructions': expected a string."},
		{"format", `{` + ok + `,"response_format":"ogg"}`, newSpeechParams, "response_format", `'response_format' must be one of mp3, opus, aac, flac, wav, pcm, got "ogg".`},
		{"format long", `{` + ok + `,"response_format":"` + strings.Repeat("x", 100) + `"}`, newSpeechParams, "response_format", `got "` + strings.Repeat("x", 64) + `...".`},
		{"speed high", `{` + ok + `,"speed":4.5}`, newSpeechParams, "speed", "'speed' must be between 0.25 and 4, got 4.5."},
		{"speed low", `{` + ok + `,"speed":0.2}`, newSpeechParams, "speed", "'speed' must be between 0.25 and 4, got 0.2."},
		{"speed a string", `{` + ok + `,"speed":"NaN"}`, newSpeechParams, "speed", "Invalid type for 'speed': expected a number between 0.25 and 4."},
		{"stream_format", `{` + ok + `,"stream_format":"ws"}`, newSpeechParams, "stream_format", `'stream_format' must be "audio" or "sse", got "ws".`},
		{"stream_format a bool", `{` + ok + `,"stream_format":true}`, newSpeechParams, "stream_format", "Invalid type for 'stream_format': expected a string."},
		{"video ok", `{"prompt":"x","model":"m","seconds":"5","size":"1x1"}`, newVideoParams, "", ""},
		{"video nulls", `{"prompt":null,"model":null,"seconds":null,"size":null}`, newVideoParams, "", ""},
		{"video prompt a number", `{"prompt":1}`, newVideoParams, "prompt", "prompt must be a string"},
		{"video seconds a number", `{"prompt":"x","seconds":8}`, newVideoParams, "seconds", "seconds must be a string"},
		{"video input_reference", `{"prompt":"x","input_reference":"aGk="}`, newVideoParams, "input_reference", "input_reference is an image file: send the request as multipart/form-data"},
		{"video input_reference null", `{"prompt":"x","input_reference":null}`, newVideoParams, "input_reference", "input_reference is an image file: send the request as multipart/form-data"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := decodeOpenAI([]byte(tc.body), tc.dst())
			if tc.param == "" {
				require.NoError(t, err)
				return
			}
			ae, ok := err.(*apiError) //nolint:errorlint // decodeOpenAI returns it unwrapped
			require.True(t, ok, "%T %v", err, err)
			require.Equal(t, 400, ae.status)
			require.Equal(t, tc.param, ae.param)
			if strings.HasPrefix(tc.msg, "got ") {
				require.Contains(t, ae.msg, tc.msg)
				return
			}
			require.Equal(t, tc.msg, ae.msg)
		})
	}
}

func newSpeechParams() any { return &openAISpeechParams{} }
func newVideoParams() any  { return &openAIVideoParams{} }

// TestOpenAISpeechTagsMatchLimits: the speed rule in openAISpeechParams' tag is media/tempo's range.
func TestOpenAISpeechTagsMatchLimits(t *testing.T) {
	f, ok := reflect.TypeFor[openAISpeechParams]().FieldByName("Speed")
	require.True(t, ok)
	require.Contains(t, f.Tag.Get("validate"), fmt.Sprintf("min=%g,max=%g", float64(tempo.MinSpeed), float64(tempo.MaxSpeed)))
	require.Contains(t, f.Tag.Get("msg"), fmt.Sprintf("between %g and %g", float64(tempo.MinSpeed), float64(tempo.MaxSpeed)))
}

// TestUndeclared: the first body field a parameter struct does not declare, in sorted order.
func TestUndeclared(t *testing.T) {
	typ := reflect.TypeFor[openAIVideoParams]()
	_, bad := undeclared(map[string]int{"prompt": 1, "input_reference": 1}, typ)
	require.False(t, bad)
	k, bad := undeclared(map[string]int{"prompt": 1, "zeta": 1, "quality": 1}, typ)
	require.True(t, bad)
	require.Equal(t, "quality", k)
	require.Equal(t, []string{"prompt", "model", "seconds", "size", "input_reference"}, declaredNames(typ))
}
