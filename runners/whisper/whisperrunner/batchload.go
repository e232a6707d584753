package whisperrunner

// Loading a BatchModel: the decoder-step batch size to serve, the programs loaded onto the
// device and checked against each other, and the traces captured at load.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper/segment"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// BatchProgram is the manifest name of the decoder step over b rows (b > 1); b = 1 is
// DecoderProgram.
func BatchProgram(b int) string {
	if b == 1 {
		return DecoderProgram
	}
	return fmt.Sprintf("%s-b%d", DecoderProgram, b)
}

// BatchSize is the decoder-step batch size a model serving up to maxBatch windows per step
// loads from programs: the smallest size with a manifest that is at least maxBatch, else the
// largest there is (1: DecoderProgram).
func BatchSize(programs fs.FS, maxBatch int) int { return simSource(programs).batchSize(maxBatch) }

// batchSize is BatchSize over the programs src has.
func (src *source) batchSize(maxBatch int) int {
	size := 1
	for b := 2; b <= maxRows && size < maxBatch; b++ {
		if src.has(BatchProgram(b)) {
			size = b
		}
	}
	return size
}

// LoadBatchModel loads the encoder and the decoder step of BatchSize(programs, maxBatch)
// onto dev, runs each once and captures the traces: one encoder trace per row and the
// decoder-step trace. It does not own dev.
func LoadBatchModel(ctx context.Context, dev *ttnn.Device, programs fs.FS, maxBatch int) (*BatchModel, error) {
	return loadBatchFrom(ctx, dev, simSource(programs), maxBatch)
}

// LoadMetalBatchModel is LoadBatchModel on the metal backend: the encoder and the decoder
// step of BatchSize among the declared steps whose .ttnn files are in weights, each checked
// against its declaration (see LoadMetalModel).
func LoadMetalBatchModel(ctx context.Context, dev *ttnn.Device, weights string, maxBatch int) (*BatchModel, error) {
	return loadBatchFrom(ctx, dev, metalSource(weights), maxBatch)
}

func loadBatchFrom(ctx context.Context, dev *ttnn.Device, src *source, maxBatch int) (_ *BatchModel, err error) {
	m := &BatchModel{dev: dev, src: src}
	defer func() {
		if err != nil {
			_ = m.Close()
		}
	}()
	info := dev.Info()
	if m.inCQ, err = inputQueue(ctx, dev); err != nil {
		return nil, err
	}
	if m.enc, err = src.load(ctx, dev, EncoderProgram); err != nil {
		return nil, err
	}
	encF, err := m.enc.Function(encoderFn)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadProgram, EncoderProgram, err)
	}
	nRows := src.batchSize(maxBatch)
	sizes := []int{nRows}
	persistent := ttnn.TensorOptions{Placement: ttnn.DRAM, Layout: ttnn.Tile, Retain: true}
	for _, b := range sizes {
		s := &batchStep{size: b}
		m.steps = append(m.steps, s)
		if s.prog, err = src.load(ctx, dev, BatchProgram(b)); err != nil {
			return nil, err
		}
		f, err := s.prog.Function(decoderFn)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadProgram, BatchProgram(b), err)
		}
		if err := m.checkStep(b, encF, f); err != nil {
			return nil, err
		}
		for i, t := range []**ttnn.Tensor{&s.ids, &s.pos} {
			if *t, err = dev.Alloc(ctx, f.Inputs[i], persistent); err != nil {
				return nil, fmt.Errorf("whisper: allocate %s: %w", f.Inputs[i].Name, err)
			}
		}
		s.idsBuf, s.posBuf = make([]byte, 4*b), make([]byte, 4*b)
		s.outBuf = make([]byte, f.Outputs[0].Bytes())
	}
	m.melBuf = make([]byte, encF.Inputs[0].Bytes())
	// Compile runs, then the rows' encoder states: one per row (the trace outputs when traced).
	traced := true
	for r := 0; r < nRows; r++ {
		row := &batchRow{}
		m.rows = append(m.rows, row)
		if row.mel, err = dev.Alloc(ctx, encF.Inputs[0], persistent); err != nil {
			return nil, fmt.Errorf("whisper: allocate %s: %w", encF.Inputs[0].Name, err)
		}
		if r == 0 || !traced {
			outs, err := m.enc.Run(ctx, 0, encoderFn, row.mel)
			if err != nil {
				return nil, fmt.Errorf("whisper: compile run of %s: %w", EncoderProgram, err)
			}
			row.states = outs[0]
		}
		if !traced {
			continue
		}
		tr, err := capture(ctx, dev, m.enc, encoderFn, row.mel)
		switch {
		case errors.Is(err, ttnn.ErrUnsupported) && r == 0:
			traced = false // a backend that compiles its own traces: run the programs directly
			continue
		case err != nil:
			return nil, fmt.Errorf("whisper: capture %s trace of row %d (trace_region_size %d): %w", EncoderProgram, r, info.TraceRegionSize, err)
		}
		freeAll(row.states)
		row.trace, row.states = tr.trace, tr.out
	}
	for _, s := range m.steps {
		in := m.stepInputs(s)
		outs, err := s.prog.Run(ctx, 0, decoderFn, in...)
		freeAll(outs...)
		if err != nil {
			return nil, fmt.Errorf("whisper: compile run of %s: %w", BatchProgram(s.size), err)
		}
		if !traced {
			continue
		}
		tr, err := capture(ctx, dev, s.prog, decoderFn, in...)
		if err != nil {
			return nil, fmt.Errorf("whisper: capture %s trace (trace_region_size %d): %w", BatchProgram(s.size), info.TraceRegionSize, err)
		}
		s.trace, s.logits = tr.trace, tr.out
	}
	m.alive = make([]bool, nRows)
	m.pending = make([]*stepReq, nRows)
	return m, nil
}

// checkStep checks the decoder step of batch size b against the encoder.
func (m *BatchModel) checkStep(b int, enc, dec ttnn.Function) error {
	name := BatchProgram(b)
	nMels, nVoc, err := checkPrograms(name, b, enc, dec)
	if err != nil {
		return err
	}
	if m.nVoc != 0 && nVoc != m.nVoc {
		return fmt.Errorf("%w: %s has %d logits per row, %s %d", ErrBadProgram, name, nVoc, DecoderProgram, m.nVoc)
	}
	m.nMels, m.nVoc = nMels, nVoc
	return nil
}

// checkPrograms checks the encoder and a decoder-step program of batch b (named name) against
// each other: one mel window in, encoder states out; b token ids, b positions and b encoder
// states in, b rows of f32 logits out. It returns the number of mel bins and of logits.
func checkPrograms(name string, b int, enc, dec ttnn.Function) (nMels, nVocab int, err error) {
	bad := func(format string, args ...any) (int, int, error) {
		return 0, 0, fmt.Errorf("%w: "+format, append([]any{ErrBadProgram}, args...)...)
	}
	if len(enc.Inputs) != 1 || len(enc.Outputs) != 1 {
		return bad("%s.%s takes %d inputs and returns %d outputs, want 1 and 1", EncoderProgram, encoderFn, len(enc.Inputs), len(enc.Outputs))
	}
	in := enc.Inputs[0]
	if in.DType != ttnn.BF16 || len(in.Shape) != 3 || in.Shape[0] != 1 || in.Shape[2] != segment.NFrames {
		return bad("%s input %v, want bf16 [1, n_mels, %d]", EncoderProgram, in, segment.NFrames)
	}
	if len(dec.Inputs) != 2+b || len(dec.Outputs) != 1 {
		return bad("%s.%s takes %d inputs and returns %d outputs, want %d and 1", name, decoderFn, len(dec.Inputs), len(dec.Outputs), 2+b)
	}
	for i, w := range []string{"input_ids", "position"} {
		d := dec.Inputs[i]
		// .ttnn tensors carry no names (positional; programs.Load checked them against the
		// declaration): an empty name is taken as the declared one.
		if (d.Name != w && d.Name != "") || d.DType != ttnn.U32 || d.Elements() != b {
			return bad("%s input %d is %v, want %s u32 of %d elements", name, i, d, w, b)
		}
	}
	out := enc.Outputs[0]
	for r := 0; r < b; r++ {
		if st := dec.Inputs[2+r]; st.DType != out.DType || !slices.Equal(st.Shape, out.Shape) {
			return bad("%s takes encoder states %v, %s returns %v", name, st, EncoderProgram, out)
		}
	}
	lg := dec.Outputs[0]
	if lg.DType != ttnn.F32 || len(lg.Shape) == 0 || lg.Elements() != b*lg.Shape[len(lg.Shape)-1] {
		return bad("%s output %v, want f32 logits of one position per row", name, lg)
	}
	return in.Shape[1], lg.Shape[len(lg.Shape)-1], nil
}
