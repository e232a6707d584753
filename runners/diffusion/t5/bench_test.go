package t5

import (
	"strings"
	"testing"
)

// benchPrompt is a typical SD3.5 prompt (about 60 words).
const benchPrompt = "A highly detailed photograph of an astronaut riding a white horse across the red " +
	"dunes of Mars at golden hour, dramatic volumetric light, 35mm lens, shallow depth of field, " +
	"dust in the air, the Earth visible as a small blue dot in the sky, cinematic colour grading, " +
	"award-winning composition, 8k, sharp focus, intricate textures on the space suit"

// BenchmarkEncode measures EncodePadded(prompt, 256), what the SD3.5 pipeline calls per prompt.
func BenchmarkEncode(b *testing.B) {
	cases := []struct {
		name string
		file string
		text string
	}{
		{"spm/test_model/prompt", "test_model.model", benchPrompt},
		{"spm/bf_model/prompt", "bf_model.model", benchPrompt},
		{"spm/test_model/long", "test_model.model", strings.Repeat(benchPrompt+" ", 8)},
		{"json/test_model/prompt", "test_model.tokenizer.json", benchPrompt},
		{"json/test_model.t5/prompt", "test_model.t5.tokenizer.json", benchPrompt},
		{"spm/test_ja_model/japanese", "test_ja_model.model", "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			tok := goldenTokenizer(b, c.file)
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			for b.Loop() {
				tok.EncodePadded(c.text, MaxLength)
			}
		})
	}
}

// BenchmarkLoad measures reading a model file.
func BenchmarkLoad(b *testing.B) {
	dir := goldenDir(b)
	for _, name := range []string{"test_model.model", "test_model.tokenizer.json"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load(dir + "/" + name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
