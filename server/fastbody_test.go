package server

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkCut is the contract of cutLongString: when it cuts, the original body is valid JSON
// exactly when the reduced one is, and both parse to the same object once the value is put back.
func checkCut(t *testing.T, body string) bool {
	t.Helper()
	reduced, value, ok := cutLongString([]byte(body), "prompt")
	if !ok {
		return false
	}
	require.Equal(t, json.Valid([]byte(body)), json.Valid(reduced), "%q -> %q", body, reduced)
	var orig, red map[string]any
	if json.Unmarshal([]byte(body), &orig) != nil {
		return true
	}
	require.NoError(t, json.Unmarshal(reduced, &red))
	require.Equal(t, "", red["prompt"])
	red["prompt"] = string(value)
	require.Equal(t, orig, red)
	return true
}

func TestCutLongString(t *testing.T) {
	for _, tc := range []struct {
		body string
		cut  bool
	}{
		{`{"prompt":"aGVsbG8="}`, true},
		{` { "top_k" : 5 , "prompt" : "data:image/png;base64,aGVsbG8=" , "x":[1,{"prompt":"no"}]}`, true},
		{`{"a":"{\"prompt\":1}","prompt":"QUJD"}`, true},
		{`{"nested":{"prompt":"x"}}`, false},        // not top level
		{`{"prompt":"a","prompt":"b"}`, false},      // duplicate: last wins, left to the parser
		{`{"pro\u006dpt":"a","prompt":"b"}`, false}, // an escaped key could be "prompt"
		{`{"prompt":"a\/b"}`, false},                // escapes in the value
		{`{"prompt":5}`, false},                     // not a string
		{`{"prompt":"unterminated}`, false},         // invalid: left to the parser
		{`{"prompt":"tab	inside"}`, false},          // control character
		{`{"prompt":"x"} trailing`, true},           // invalid either way
		{`["prompt","x"]`, false},                   // not an object key
		{`{"k":"v\\","prompt":"AAAA","top_k":[1,2]}`, true},
	} {
		require.Equal(t, tc.cut, checkCut(t, tc.body), tc.body)
	}
}

func FuzzCutLongString(f *testing.F) {
	for _, s := range []string{`{"prompt":"aGVsbG8="}`, `{"a":"{\"prompt\":1}","prompt":"QUJD"}`, `{"prompt":"a","prompt":"b"}`, `{"x":{"prompt":"y"},"prompt":"z"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) { checkCut(t, body) })
}
