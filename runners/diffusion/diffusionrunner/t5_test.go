//go:build cgo

package diffusionrunner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
)

// writeTinyT5 writes a tiny T5 tokenizer_3/tokenizer.json (a Unigram model in Hugging Face's
// layout: T5's special ids pad 0, </s> 1, <unk> 2, a few word pieces and single letters, the
// Metaspace pre-tokenizer and an eos post-processor) into the weights directory.
func writeTinyT5(t *testing.T, weights string) {
	t.Helper()
	pieces := [][2]any{{"<pad>", 0.0}, {"</s>", 0.0}, {"<unk>", 0.0}, {"▁the", -2.0}, {"▁man", -2.5}, {"▁red", -3.0},
		{"▁ant", -3.0}, {"▁", -4.0}}
	for _, c := range "abcdefghijklmnopqrstuvwxyz" {
		pieces = append(pieces, [2]any{string(c), -8.0})
	}
	special := func(id int, s string) map[string]any {
		return map[string]any{"id": id, "content": s, "single_word": false, "lstrip": false, "rstrip": false,
			"normalized": false, "special": true}
	}
	tj := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil,
		"added_tokens":  []any{special(0, "<pad>"), special(1, "</s>"), special(2, "<unk>")},
		"normalizer":    nil,
		"pre_tokenizer": map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"SpecialToken": map[string]any{"id": "</s>", "type_id": 0}}},
			"pair":           []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"SpecialToken": map[string]any{"id": "</s>", "type_id": 0}}},
			"special_tokens": map[string]any{"</s>": map[string]any{"id": "</s>", "ids": []int{1}, "tokens": []string{"</s>"}}}},
		"decoder": map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
		"model":   map[string]any{"type": "Unigram", "unk_id": 2, "vocab": pieces, "byte_fallback": false},
	}
	b, err := json.Marshal(tj)
	require.NoError(t, err)
	dir := filepath.Join(weights, "tokenizer_3")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o600))
}

func TestSD35WithT5(t *testing.T) {
	weights := writeTinyWeights(t)
	writeTinyT5(t, weights)
	r, err := New(testConfig(t, SD35, weights))
	require.NoError(t, err)
	require.NotNil(t, r.tok.t5, "tokenizer_3 loaded")
	ids := r.tok.t5.T5IDs("the red man", diffusionpipeline.T5SeqLen)
	require.Len(t, ids, diffusionpipeline.T5SeqLen)
	require.Equal(t, []int{3, 5, 4, 1, 0, 0}, ids[:6], "pieces, </s>, then <pad>")
	require.NoError(t, r.Close())

	// The T5 embeddings reach the image: the same request without tokenizer_3 differs.
	req := &runners.ImageRequest{Prompt: "the red man", NumInferenceSteps: 2, Seed: seed(4)}
	gen := func(weights string) []byte {
		r := warmRunner(t, testConfig(t, SD35, weights))
		defer func() { require.NoError(t, r.Close()) }()
		return pix(t, image0(t, r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: req}})[0]))
	}
	require.NotEqual(t, gen(writeTinyWeights(t)), gen(weights))

	// A broken tokenizer_3 is an error, not a silent fallback.
	require.NoError(t, os.WriteFile(filepath.Join(weights, "tokenizer_3", "tokenizer.json"), []byte("{"), 0o600))
	_, err = New(testConfig(t, SD35, weights))
	require.ErrorContains(t, err, "tokenizer_3")
}
