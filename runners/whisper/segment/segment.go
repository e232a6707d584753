// Package segment turns the tokens decoded for one 30-second window into timed transcript
// segments and the seek position of the next window, as openai/whisper's transcribe() does
// (without word timestamps): consecutive timestamp pairs close segments, a single timestamp
// at the end means the rest of the window is silent, and otherwise the next window starts
// at the last complete segment's end.
package segment

import (
	"errors"
	"fmt"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
)

// Audio framing of whisper's log-mel input.
const (
	SampleRate      = 16000
	HopLength       = 160
	FramesPerSecond = SampleRate / HopLength // 100 mel frames per second
	NFrames         = 3000                   // frames in one 30 s window
	InputStride     = 2                      // mel frames per timestamp step (N_FRAMES / n_audio_ctx)
)

// ErrBadWindow reports window bounds that cannot come from transcribe's loop.
var ErrBadWindow = errors.New("bad window")

// Window is one decoded window.
type Window struct {
	// Seek is the mel-frame index where the window starts.
	Seek int
	// Frames is the number of mel frames of audio in the window (segment_size: at most
	// NFrames, less at the end of the audio).
	Frames int
	// Tokens are the sampled tokens (DecodingResult.tokens: after the prompt, before EOT).
	Tokens []int
	// The window's decoding figures, copied into every segment (verbose_json fields).
	Temperature, AvgLogProb, CompressionRatio, NoSpeechProb float64
}

// Segment is one timed piece of transcript.
type Segment struct {
	Seek       int // Window.Seek of the window it came from
	Start, End float64
	// Text is the decoded text tokens, with their leading space (not stripped).
	Text                                                    string
	Tokens                                                  []int // the segment's tokens, timestamps included
	Temperature, AvgLogProb, CompressionRatio, NoSpeechProb float64
}

// Split cuts a window's tokens into segments and returns them with the seek of the next
// window. Segments that are instantaneous (start == end) or hold only white space keep their
// times but have empty Text and no Tokens, as in transcribe().
func Split(tok *whispertokenizer.Tokenizer, w Window) ([]Segment, int, error) {
	if w.Seek < 0 || w.Frames <= 0 || w.Frames > NFrames {
		return nil, 0, fmt.Errorf("%w: seek %d, %d frames", ErrBadWindow, w.Seek, w.Frames)
	}
	tb := tok.TimestampBegin()
	timeOffset := float64(w.Seek*HopLength) / SampleRate
	const timePrecision = float64(InputStride*HopLength) / SampleRate // 0.02 s
	tokens := w.Tokens
	isTS := func(i int) bool { return tokens[i] >= tb }
	n := len(tokens)
	singleTimestampEnding := n >= 2 && !isTS(n-2) && isTS(n-1)

	var slices []int
	for i := 0; i+1 < n; i++ {
		if isTS(i) && isTS(i+1) {
			slices = append(slices, i+1)
		}
	}
	var segs []Segment
	add := func(start, end float64, toks []int) error {
		s, err := w.segment(tok, start, end, toks)
		if err != nil {
			return err
		}
		segs = append(segs, s)
		return nil
	}
	seek := w.Seek
	if len(slices) > 0 {
		if singleTimestampEnding {
			slices = append(slices, n)
		}
		last := 0
		for _, cur := range slices {
			sliced := tokens[last:cur]
			startPos := sliced[0] - tb
			endPos := sliced[len(sliced)-1] - tb
			if err := add(timeOffset+float64(startPos)*timePrecision, timeOffset+float64(endPos)*timePrecision, sliced); err != nil {
				return nil, 0, err
			}
			last = cur
		}
		if singleTimestampEnding {
			// A single timestamp at the end: no speech after it.
			seek += w.Frames
		} else {
			// Drop the unfinished segment and restart at the last complete timestamp.
			seek += (tokens[last-1] - tb) * InputStride
		}
	} else {
		duration := float64(w.Frames*HopLength) / SampleRate
		lastTS := -1
		for i := n - 1; i >= 0; i-- {
			if isTS(i) {
				lastTS = tokens[i]
				break
			}
		}
		if lastTS >= 0 && lastTS != tb {
			// No pair, but a timestamp: it ends the segment.
			duration = float64(lastTS-tb) * timePrecision
		}
		if err := add(timeOffset, timeOffset+duration, tokens); err != nil {
			return nil, 0, err
		}
		seek += w.Frames
	}
	return segs, seek, nil
}

func (w Window) segment(tok *whispertokenizer.Tokenizer, start, end float64, toks []int) (Segment, error) {
	text, err := tok.DecodeText(toks)
	if err != nil {
		return Segment{}, err
	}
	s := Segment{
		Seek: w.Seek, Start: start, End: end, Text: text, Tokens: append([]int(nil), toks...),
		Temperature: w.Temperature, AvgLogProb: w.AvgLogProb,
		CompressionRatio: w.CompressionRatio, NoSpeechProb: w.NoSpeechProb,
	}
	if start == end || isBlank(text) {
		s.Text, s.Tokens = "", nil
	}
	return s, nil
}

// isBlank is Python's text.strip() == "".
func isBlank(s string) bool {
	for _, r := range s {
		if !isPySpace(r) {
			return false
		}
	}
	return true
}
