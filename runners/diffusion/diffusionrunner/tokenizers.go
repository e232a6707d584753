package diffusionrunner

// The text encoders' tokenizers of a model directory: CLIP's BPE (both SDXL encoders, SD3.5's
// first two) and T5's sentencepiece (SD3.5's third).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/clip"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/diffusionpipeline"
)

// tokenizers are what a runner loads from the weights directory.
type tokenizers struct {
	clip *clip.Tokenizer
	t5   diffusionpipeline.T5Tokenizer // nil: SD3.5 runs without T5 (zero embeddings)
}

// loadT5 loads tokenizer_3; nil when this build has no T5 tokenizer.
var loadT5 func(dir string) (diffusionpipeline.T5Tokenizer, error)

// bpeFile is the original CLIP vocabulary file name (OpenAI's CLIP repository).
const bpeFile = "bpe_simple_vocab_16e6.txt.gz"

// loadCLIP reads the CLIP tokenizer from dir/tokenizer (Hugging Face's vocab.json and
// merges.txt), or else from the original bpe_simple_vocab_16e6.txt.gz in dir/tokenizer or dir.
func loadCLIP(dir string) (*clip.Tokenizer, error) {
	cdir := filepath.Join(dir, "tokenizer")
	_, errV := os.Stat(filepath.Join(cdir, "vocab.json"))
	_, errM := os.Stat(filepath.Join(cdir, "merges.txt"))
	if errV == nil && errM == nil {
		return clip.LoadHFDir(cdir)
	}
	for _, p := range []string{filepath.Join(cdir, bpeFile), filepath.Join(dir, bpeFile)} {
		if _, err := os.Stat(p); err == nil {
			return clip.LoadBPEFile(p)
		}
	}
	return nil, fmt.Errorf("%w in %q", ErrNoTokenizer, dir)
}

// loadTokenizers reads the CLIP tokenizer and, for SD3.5, tokenizer_3/ when present.
func loadTokenizers(model Model, dir string) (tokenizers, error) {
	var tk tokenizers
	var err error
	if tk.clip, err = loadCLIP(dir); err != nil {
		if errors.Is(err, ErrNoTokenizer) {
			return tk, err
		}
		return tk, fmt.Errorf("diffusion runner: %w", err)
	}
	if model == SD35 && loadT5 != nil {
		t5dir := filepath.Join(dir, "tokenizer_3")
		if _, err := os.Stat(t5dir); err == nil {
			if tk.t5, err = loadT5(t5dir); err != nil {
				return tk, fmt.Errorf("diffusion runner: tokenizer_3: %w", err)
			}
		}
	}
	return tk, nil
}
