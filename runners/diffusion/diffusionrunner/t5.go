package diffusionrunner

import (
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/t5"
)

func init() {
	loadT5 = func(dir string) (diffusionpipeline.T5Tokenizer, error) {
		tok, err := t5.Load(dir)
		if err != nil {
			return nil, err
		}
		return t5IDs{tok}, nil
	}
}

// t5IDs adapts the T5 tokenizer to the pipeline: diffusers' tokenizer_3(prompt,
// padding="max_length", max_length=256, truncation=True) ids; SD3.5 passes no attention mask.
type t5IDs struct{ tok *t5.Tokenizer }

func (a t5IDs) T5IDs(text string, maxLen int) []int {
	ids, _ := a.tok.EncodePadded(text, maxLen)
	return ids
}
