package clip

// ContextLength is the sequence length of CLIP's text encoders.
const ContextLength = 77

// Inputs is one text encoder's input sequence: [start] + ids[:length-2] + [end], padded.
type Inputs struct {
	// IDs has exactly the encoder's sequence length (77).
	IDs []int
	// EOTPosition is the index of the end token appended after the prompt's ids.
	EOTPosition int
	// FirstEOTIndex is the first <|endoftext|> among IDs, where Hugging Face's CLIPTextModel
	// pools; it differs from EOTPosition only when the prompt contains a literal <|endoftext|>.
	FirstEOTIndex int
	// Truncated reports that the prompt had more BPE ids than fit and the tail was cut.
	Truncated bool
}

// EncoderInputs tokenizes text into the tokenizer's own encoder input: start token, at most
// MaxLength()-2 ids, end token, then PadID() up to MaxLength(). It is what diffusers gets
// from tokenizer(prompt, padding="max_length", max_length=77, truncation=True).
func (t *Tokenizer) EncoderInputs(text string) Inputs {
	return t.InputsFromIDs(t.Encode(text), t.padID)
}

// InputsFromIDs builds the encoder input from raw BPE ids with the given padding id. SDXL's
// first tokenizer (CLIP ViT-L/14) pads with <|endoftext|> (49407), the second (OpenCLIP
// ViT-bigG/14) with "!" (0).
func (t *Tokenizer) InputsFromIDs(ids []int, padID int) Inputs {
	n := t.maxLen
	keep := min(len(ids), n-2)
	out := make([]int, n)
	out[0] = t.sot
	copy(out[1:], ids[:keep])
	out[keep+1] = t.eot
	for i := keep + 2; i < n; i++ {
		out[i] = padID
	}
	first := keep + 1
	for i, id := range out {
		if id == t.eot {
			first = i
			break
		}
	}
	return Inputs{IDs: out, EOTPosition: keep + 1, FirstEOTIndex: first, Truncated: len(ids) > keep}
}

// SDXLInputs is the prompt's input for both SDXL text encoders.
type SDXLInputs struct {
	// Encoder1 is for text_encoder (CLIP ViT-L/14), padded with <|endoftext|>.
	Encoder1 Inputs
	// Encoder2 is for text_encoder_2 (OpenCLIP ViT-bigG/14), padded with 0 ("!").
	Encoder2 Inputs
}

// PadSDXL2 is the padding id of SDXL's tokenizer_2 ("!" in CLIP's vocabulary).
const PadSDXL2 = 0

// SDXL tokenizes prompt for the first encoder and prompt2 for the second, as diffusers'
// StableDiffusionXLPipeline does (prompt_2 defaults to prompt: pass the same string). Both
// tokenizers share CLIP's vocabulary; only the padding differs, so one Tokenizer serves both.
func (t *Tokenizer) SDXL(prompt, prompt2 string) SDXLInputs {
	ids1 := t.Encode(prompt)
	ids2 := ids1
	if prompt2 != prompt {
		ids2 = t.Encode(prompt2)
	}
	return SDXLInputs{
		Encoder1: t.InputsFromIDs(ids1, t.eot),
		Encoder2: t.InputsFromIDs(ids2, PadSDXL2),
	}
}
