package speecht5pipeline

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/speecht5/speecht5tokenizer"
)

// scripted is a device whose stop logits come from a script per step; frames carry the step
// number and the frame fed back is recorded.
type scripted struct {
	stop    func(step int) []float32
	fedBack [][]float32
	encoded [][]int32
	masks   [][]float32
	vocoded [][][]float32
}

func (d *scripted) Encode(_ context.Context, ids []int32, mask []float32, realLen int) (Encoded, error) {
	d.encoded = append(d.encoded, ids)
	d.masks = append(d.masks, mask)
	return realLen, nil
}

func (d *scripted) Step(_ context.Context, _ Encoded, prev []float32, step int) ([][]float32, []float32, error) {
	d.fedBack = append(d.fedBack, prev)
	f := func(k int) []float32 {
		v := make([]float32, MelBins)
		v[0], v[1] = float32(step), float32(k)
		return v
	}
	return [][]float32{f(0), f(1)}, d.stop(step), nil
}

func (d *scripted) Vocode(_ context.Context, mel [][]float32) ([]float32, error) {
	d.vocoded = append(d.vocoded, mel)
	return make([]float32, len(mel)*HopLength), nil
}

func TestStopRule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		step   int
		logits []float32
		want   bool
	}{
		{"before step 10 never", 9, []float32{50, 50}, false},
		{"step 10, one certain", 10, []float32{50, -50}, true},
		{"two just above 0.25 sum past 0.5", 10, []float32{-1.098, -1.098}, true}, // sigmoid(-ln 3) = 0.25
		{"just below", 10, []float32{-1.1, -1.1}, false},
		{"all low", 400, []float32{-9, -9}, false},
	} {
		require.Equal(t, tc.want, ShouldStop(tc.step, tc.logits), tc.name)
	}
}

func TestDecoderLoop(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		stop      func(int) []float32
		wantSteps int
	}{
		{"stops at the first step the rule fires", func(s int) []float32 {
			if s == 37 {
				return []float32{3, -3}
			}
			return []float32{-10, -10}
		}, 38},
		{"a stop before step 10 is ignored", func(s int) []float32 {
			if s < 10 {
				return []float32{10, 10}
			}
			return []float32{-10, -10}
		}, MaxSteps},
		{"stops at step 10 at the earliest", func(int) []float32 { return []float32{10, 10} }, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &scripted{stop: tc.stop}
			p := &Pipeline{Tok: speecht5tokenizer.Builtin(), Dev: d}
			res, err := p.Generate(ctx, "Hello", nil)
			require.NoError(t, err)
			require.Equal(t, tc.wantSteps, res.Steps)
			require.Len(t, res.Mel, ReductionFactor*tc.wantSteps)
			require.Len(t, res.Samples, ReductionFactor*tc.wantSteps*HopLength)
			// Zeros first, then the last frame of the previous step.
			require.Equal(t, make([]float32, MelBins), d.fedBack[0])
			for s := 1; s < len(d.fedBack); s++ {
				require.Equal(t, []float32{float32(s - 1), 1}, d.fedBack[s][:2])
			}
		})
	}
}

func TestPaddingAndMask(t *testing.T) {
	d := &scripted{stop: func(int) []float32 { return []float32{9, 9} }}
	p := &Pipeline{Tok: speecht5tokenizer.Builtin(), Dev: d}
	_, err := p.Generate(context.Background(), "Hi", nil)
	require.NoError(t, err)
	ids, mask := d.encoded[0], d.masks[0]
	require.Len(t, ids, 32)
	n := len(speecht5tokenizer.Builtin().Encode("Hi"))
	for i := range ids {
		if i < n {
			require.Zero(t, mask[i])
			require.NotEqual(t, int32(speecht5tokenizer.PadID), ids[i])
		} else {
			require.Equal(t, int32(speecht5tokenizer.PadID), ids[i])
			require.Equal(t, float32(-1e9), mask[i])
		}
	}
	for n, want := range map[int]int{1: 32, 32: 32, 33: 64, 129: 160, 161: 192, 193: 256, 256: 256} {
		b, err := speecht5tokenizer.Bucket(n)
		require.NoError(t, err)
		require.Equal(t, want, b, n)
	}
	_, err = speecht5tokenizer.Bucket(257)
	require.ErrorIs(t, err, speecht5tokenizer.ErrTooLong)
}

func TestChunksStreamInOrderAndCancel(t *testing.T) {
	text := ""
	for range 12 {
		text += "This sentence is here to make the text long enough for chunks. "
	}
	d := &scripted{stop: func(s int) []float32 {
		if s == 20 {
			return []float32{9, 9}
		}
		return []float32{-9, -9}
	}}
	p := &Pipeline{Tok: speecht5tokenizer.Builtin(), Dev: d}
	var got []int
	res, err := p.Generate(context.Background(), text, func(c ChunkAudio) error {
		got = append(got, c.Index)
		require.Len(t, c.Samples, 21*ReductionFactor*HopLength)
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, res.Chunks, 1)
	require.Len(t, got, res.Chunks)
	require.Len(t, res.Mel, res.Chunks*21*ReductionFactor)

	// Cancelled during chunk 0's step 5: no further step runs.
	ctx, cancel := context.WithCancel(context.Background())
	steps := 0
	p.OnStep = func(_, step int) {
		steps++
		if step == 5 {
			cancel()
		}
	}
	_, err = p.Generate(ctx, text, nil)
	require.True(t, errors.Is(err, context.Canceled))
	require.Equal(t, 6, steps)
}

// framed vocodes each frame into HopLength copies of a value of the frame alone, so a vocoder
// run over any window gives the same samples for the same frames.
type framed struct{ scripted }

func (d *framed) Vocode(_ context.Context, mel [][]float32) ([]float32, error) {
	d.vocoded = append(d.vocoded, mel)
	out := make([]float32, 0, len(mel)*HopLength)
	for _, f := range mel {
		for range HopLength {
			out = append(out, f[0]+f[1]/2)
		}
	}
	return out, nil
}

// With LeadSteps the first chunk's audio comes after LeadSteps decoder steps whatever its
// length, in two pieces that add up to the whole chunk's audio; a chunk no longer than the lead,
// the later chunks and a caller taking no stream are vocoded whole.
func TestLeadVocodesTheFirstChunkEarly(t *testing.T) {
	text := "A first clause of the text, and a second sentence. Then another one follows it here."
	for _, tc := range []struct {
		name       string
		stopAt     int // the step at which every chunk stops
		lead       int
		stream     bool
		wantPieces int // of chunk 0
	}{
		{"a long first chunk comes in two pieces", 60, 16, true, 2},
		{"a chunk ending before the lead comes whole", 12, 16, true, 1},
		{"no stream: no lead", 60, 16, false, 0},
		{"no lead", 60, 0, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &framed{scripted{stop: func(s int) []float32 {
				if s == tc.stopAt {
					return []float32{9, 9}
				}
				return []float32{-9, -9}
			}}}
			p := &Pipeline{Tok: speecht5tokenizer.Builtin(), Dev: d, LeadSteps: tc.lead, FirstChunkChars: 30}
			steps := 0
			p.OnStep = func(int, int) { steps++ }
			var pieces []ChunkAudio
			var stepsAt []int
			var emit func(ChunkAudio) error
			if tc.stream {
				emit = func(c ChunkAudio) error {
					pieces = append(pieces, c)
					stepsAt = append(stepsAt, steps)
					return nil
				}
			}
			res, err := p.Generate(context.Background(), text, emit)
			require.NoError(t, err)
			require.Greater(t, res.Chunks, 1)
			whole, err := d.Vocode(context.Background(), res.Mel)
			require.NoError(t, err)
			require.Len(t, res.Samples, len(whole))
			require.InDeltaSlice(t, whole, res.Samples, 1e-5, "the pieces add up to the whole text's audio")
			first := 0
			var streamed []float32
			for _, c := range pieces {
				streamed = append(streamed, c.Samples...)
				if c.Index == 0 {
					first++
				}
			}
			require.Equal(t, tc.wantPieces, first)
			if !tc.stream {
				return
			}
			require.Equal(t, res.Samples, streamed)
			if tc.wantPieces == 2 {
				require.True(t, pieces[0].Lead)
				require.Equal(t, tc.lead, stepsAt[0], "the head comes right after the lead's steps")
				require.Len(t, pieces[0].Samples, (ReductionFactor*tc.lead-leadHold)*HopLength)
				require.False(t, pieces[1].Lead)
			} else {
				require.Equal(t, tc.stopAt+1, stepsAt[0])
			}
		})
	}
}
