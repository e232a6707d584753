package decoding

import "github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"

// TextPromptTokens encodes an initial prompt or prefix given as text the way whisper does:
// encode(" " + text.strip()). An empty or blank text gives no tokens.
func TextPromptTokens(tok *whispertokenizer.Tokenizer, text string) []int {
	s := Strip(text)
	if s == "" {
		return nil
	}
	return tok.Encode(" " + s)
}

// InitialTokens is DecodingTask._get_initial_tokens: the decoder input before the first
// sampled token. With a prompt (previous text), it is <|startofprev|>, the last
// nTextCtx/2 - 1 prompt tokens, then the sot sequence; a prefix follows the sot sequence,
// cut to its last nTextCtx/2 - sampleLen tokens with Python's slice semantics (a bound of 0
// keeps the whole prefix, as prefix[-0:] does). Whisper's sample_len defaults to nTextCtx/2
// (224 for n_text_ctx 448). len(result) is the sample_begin of the filters.
func InitialTokens(tok *whispertokenizer.Tokenizer, sotSequence, prompt, prefix []int, nTextCtx, sampleLen int) []int {
	out := make([]int, 0, 1+len(prompt)+len(sotSequence)+len(prefix))
	if len(prompt) > 0 {
		out = append(out, tok.SOTPrev())
		out = append(out, pyTail(prompt, nTextCtx/2-1)...)
	}
	out = append(out, sotSequence...)
	if len(prefix) > 0 {
		out = append(out, pyTail(prefix, nTextCtx/2-sampleLen)...)
	}
	return out
}

// pyTail is Python's s[-k:]: the last k elements for k > 0, all of s for k == 0, and s
// without its first -k elements for k < 0.
func pyTail(s []int, k int) []int {
	switch {
	case k == 0:
		return s
	case k > 0:
		return s[max(len(s)-k, 0):]
	default:
		return s[min(-k, len(s)):]
	}
}
