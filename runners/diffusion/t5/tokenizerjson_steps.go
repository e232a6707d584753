package t5

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

func parseHFNormalizer(raw json.RawMessage) ([]hfNormalizer, error) {
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: normalizer: %w", ErrInvalidModel, err)
	}
	switch c.Type {
	case "Sequence":
		var out []hfNormalizer
		for _, r := range c.Normalizers {
			n, err := parseHFNormalizer(r)
			if err != nil {
				return nil, err
			}
			out = append(out, n...)
		}
		return out, nil
	case "Precompiled":
		if c.PrecompiledCharsmap == nil || *c.PrecompiledCharsmap == "" {
			return nil, nil // tokenizers treats an empty charsmap as the identity
		}
		blob, err := base64.StdEncoding.DecodeString(*c.PrecompiledCharsmap)
		if err != nil {
			return nil, fmt.Errorf("%w: precompiled_charsmap: %w", ErrInvalidModel, err)
		}
		cm, err := parseCharsmap(blob)
		if err != nil {
			return nil, err
		}
		return []hfNormalizer{cm.apply}, nil
	case "Strip":
		left, right := c.StripLeft == nil || *c.StripLeft, c.StripRight == nil || *c.StripRight
		return []hfNormalizer{func(s string) string {
			if left {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if right {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}}, nil
	case "Replace":
		content := c.Content
		switch {
		case c.Pattern.String != nil:
			pat := *c.Pattern.String
			if pat == "" {
				return nil, fmt.Errorf("%w: Replace with an empty pattern", ErrInvalidModel)
			}
			return []hfNormalizer{func(s string) string { return strings.ReplaceAll(s, pat, content) }}, nil
		case c.Pattern.Regex != nil:
			re, err := regexp.Compile(*c.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("%w: Replace regex %q: %w", ErrUnsupported, *c.Pattern.Regex, err)
			}
			return []hfNormalizer{func(s string) string { return re.ReplaceAllLiteralString(s, content) }}, nil
		}
		return nil, fmt.Errorf("%w: Replace without a pattern", ErrInvalidModel)
	case "Prepend":
		pre := c.Prepend
		return []hfNormalizer{func(s string) string {
			if s == "" {
				return s
			}
			return pre + s
		}}, nil
	}
	return nil, fmt.Errorf("%w: normalizer %q", ErrUnsupported, c.Type)
}

func (h *hfPipeline) parsePreTokenizer(raw json.RawMessage, top bool) error {
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("%w: pre_tokenizer: %w", ErrInvalidModel, err)
	}
	switch c.Type {
	case "Sequence":
		if !top {
			return fmt.Errorf("%w: nested pre_tokenizer Sequence", ErrUnsupported)
		}
		for _, r := range c.Pretokenizers {
			if err := h.parsePreTokenizer(r, false); err != nil {
				return err
			}
		}
		return nil
	case "WhitespaceSplit":
		if h.metaspace != nil {
			return fmt.Errorf("%w: WhitespaceSplit after Metaspace", ErrUnsupported)
		}
		h.whitespaceSplit = true
		return nil
	case "Metaspace":
		m, err := parseMetaspace(c)
		if err != nil {
			return err
		}
		h.metaspace = m
		return nil
	}
	return fmt.Errorf("%w: pre_tokenizer %q", ErrUnsupported, c.Type)
}

func parseMetaspace(c hfComponent) (*hfMetaspace, error) {
	m := &hfMetaspace{replacement: c.Replacement, prepend: "always", split: true}
	if utf8.RuneCountInString(m.replacement) != 1 {
		return nil, fmt.Errorf("%w: Metaspace replacement %q is not one character", ErrInvalidModel, c.Replacement)
	}
	switch {
	case c.PrependScheme != "":
		m.prepend = c.PrependScheme
	case c.AddPrefixSpace != nil && !*c.AddPrefixSpace:
		m.prepend = "never"
	}
	if m.prepend != "always" && m.prepend != "first" && m.prepend != "never" {
		return nil, fmt.Errorf("%w: Metaspace prepend_scheme %q", ErrInvalidModel, m.prepend)
	}
	if c.Split != nil {
		m.split = *c.Split
	}
	return m, nil
}

func parseHFDecoder(raw json.RawMessage) ([]hfDecoder, error) {
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: decoder: %w", ErrInvalidModel, err)
	}
	switch c.Type {
	case "Sequence":
		var out []hfDecoder
		for _, r := range c.Decoders {
			d, err := parseHFDecoder(r)
			if err != nil {
				return nil, err
			}
			out = append(out, d...)
		}
		return out, nil
	case "Metaspace":
		m, err := parseMetaspace(c)
		if err != nil {
			return nil, err
		}
		return []hfDecoder{func(toks []string) []string {
			for i, tok := range toks {
				if i == 0 && m.prepend != "never" {
					toks[i] = strings.ReplaceAll(tok, m.replacement, "")
				} else {
					toks[i] = strings.ReplaceAll(tok, m.replacement, " ")
				}
			}
			return toks
		}}, nil
	case "Replace":
		if c.Pattern.String == nil || *c.Pattern.String == "" {
			return nil, fmt.Errorf("%w: Replace decoder without a string pattern", ErrUnsupported)
		}
		pat, content := *c.Pattern.String, c.Content
		return []hfDecoder{func(toks []string) []string {
			for i, tok := range toks {
				toks[i] = strings.ReplaceAll(tok, pat, content)
			}
			return toks
		}}, nil
	case "ByteFallback":
		return []hfDecoder{decodeByteFallback}, nil
	case "Fuse":
		return []hfDecoder{func(toks []string) []string { return []string{strings.Join(toks, "")} }}, nil
	case "Strip":
		content, start, stop := c.Content, c.Start, c.Stop
		if utf8.RuneCountInString(content) != 1 {
			return nil, fmt.Errorf("%w: Strip decoder content %q", ErrInvalidModel, content)
		}
		return []hfDecoder{func(toks []string) []string {
			for i, tok := range toks {
				for range start {
					var ok bool
					if tok, ok = strings.CutPrefix(tok, content); !ok {
						break
					}
				}
				for range stop {
					var ok bool
					if tok, ok = strings.CutSuffix(tok, content); !ok {
						break
					}
				}
				toks[i] = tok
			}
			return toks
		}}, nil
	}
	return nil, fmt.Errorf("%w: decoder %q", ErrUnsupported, c.Type)
}

// decodeByteFallback is tokenizers' ByteFallback decoder: a run of <0xXX> tokens becomes its
// bytes when they are valid UTF-8 as a whole, otherwise one U+FFFD per token.
func decodeByteFallback(toks []string) []string {
	out := toks[:0:0]
	var run []byte
	n := 0
	flush := func() {
		if n == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			for range n {
				out = append(out, "\uFFFD")
			}
		}
		run, n = run[:0], 0
	}
	for _, tok := range toks {
		if b, ok := pieceToByte(tok); ok {
			run = append(run, b)
			n++
			continue
		}
		flush()
		out = append(out, tok)
	}
	flush()
	return out
}
