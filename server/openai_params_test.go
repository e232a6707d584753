package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeOpenAIImageParams: the declared OpenAI image parameters accept what the hand
// reader accepted (lax numbers and booleans), and every refusal is a 400 naming the field with
// the field's own message.
func TestDecodeOpenAIImageParams(t *testing.T) {
	tests := []struct {
		body  string
		param string // "" = accepted
		msg   string
	}{
		{`{"prompt":"a","n":"2","stream":"true","seed":"7","guidance_scale":"4.5","steps":20.0}`, "", ""},
		{`{"prompt":"a","n":null}`, "", ""},
		{`{"prompt":"a","n":5}`, "n", "n must be between 1 and 4 for this model, got 5"},
		{`{"prompt":"a","n":"many"}`, "n", "n must be an integer, got a JSON string"},
		{`{"prompt":"a","n":2.5}`, "n", "n must be an integer"},
		{`{"prompt":"a","stream":"maybe"}`, "stream", "stream must be a boolean"},
		{`{"prompt":"   "}`, "prompt", "prompt must be a non-empty string"},
		{`{}`, "prompt", "prompt must be a non-empty string"},
		{`{"prompt":7}`, "prompt", "prompt must be a string, got a JSON number"},
		{`{"prompt":"a","style":"vivid"}`, "style", `style "vivid" is not supported`},
		{`{"prompt":"a","moderation":""}`, "moderation", `moderation "" is not supported`},
		{`{"prompt":"a","quality":"ultra"}`, "quality", `got "ultra"`},
		{`{"prompt":"a","guidance_scale":25}`, "guidance_scale", "guidance_scale must be between 1 and 20, got 25"},
		{`{"prompt":"a","output_compression":101}`, "output_compression", "between 0 and 100, got 101"},
		{`{"prompt":"a","partial_images":4}`, "partial_images", "between 0 and 3, got 4"},
	}
	for _, tc := range tests {
		t.Run(tc.body, func(t *testing.T) {
			var p openAIImageParams
			err := decodeOpenAI([]byte(tc.body), &p)
			if tc.param == "" {
				require.NoError(t, err)
				return
			}
			ae, ok := err.(*apiError) //nolint:errorlint // decodeOpenAI returns it unwrapped
			require.True(t, ok, "%T %v", err, err)
			require.Equal(t, 400, ae.status)
			require.Equal(t, tc.param, ae.param)
			require.Contains(t, ae.msg, tc.msg)
		})
	}
	var p openAIImageParams
	require.NoError(t, decodeOpenAI([]byte(`{"prompt":"a","n":"2","stream":"true","seed":"7","guidance_scale":"4.5","steps":20.0}`), &p))
	require.EqualValues(t, 2, *p.N)
	require.True(t, bool(*p.Stream))
	require.EqualValues(t, 7, *p.Seed)
	require.InDelta(t, 4.5, float64(*p.GuidanceScale), 0)
	require.EqualValues(t, 20, *p.Steps)
}
