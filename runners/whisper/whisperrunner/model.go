package whisperrunner

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"

	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/segment"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/transcribe"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Device programs of the Whisper model (ttnn/programs/<name>.ttbsim).
const (
	EncoderProgram = "whisper-encoder"
	DecoderProgram = "whisper-decoder-step"
	encoderFn      = "encode"
	decoderFn      = "step"
	// nTextCtx is the decoder's context (n_text_ctx of every Whisper model).
	nTextCtx = 448
)

// Errors of the device model.
var (
	// ErrBadProgram: a device program does not have the inputs and outputs the model needs.
	ErrBadProgram = errors.New("whisper device program does not fit")
	// ErrStaleState: a decoder step on encoder states that a later Encode replaced (the
	// device keeps one window's states).
	ErrStaleState = errors.New("encoder state replaced by a later window")
	// ErrBadSequence: a decoder step that does not continue the sequence on the device.
	ErrBadSequence = errors.New("decoder step out of sequence")
)

// Model is transcribe.Model on a ttnn device: the encoder program turns one window's
// log-mel into encoder states that stay on the device, and the decoder-step program takes
// one token and its position, keeps the key/value caches on the device, and returns the
// logits. Both are captured as traces when the model is loaded and replayed after (the
// encoder's trace output is the decoder trace's input, so the states never leave the
// device); on a backend without explicit traces the programs run directly. With two command
// queues the inputs are written on queue 1 and the replays wait for them on queue 0 through
// an event, as tt-metal's Whisper demo overlaps its input copies.
//
// A Model is used by one goroutine at a time. The device holds one window's encoder states:
// an Encode makes the earlier state stale (ErrStaleState), which transcribe's loop never
// trips over since it decodes each window before encoding the next.
type Model struct {
	dev      *ttnn.Device
	src      *source
	enc, dec *ttnn.Program
	// Persistent inputs: the log-mel window, the token and its position.
	mel, ids, pos *ttnn.Tensor
	// Traces and their outputs (nil without traces).
	encTrace, decTrace *ttnn.Trace
	states, logits     *ttnn.Tensor
	inCQ               int
	nMels, nVocab      int

	gen    uint64 // Encode count: the live state's generation
	seqLen int    // tokens fed to the decoder since the last offset 0
	melBuf []byte
	word   []byte
	outBuf []byte
}

var _ transcribe.Model = (*Model)(nil)

// encoderState is one encoded window; without traces it owns the encoder's output tensor.
type encoderState struct {
	m      *Model
	gen    uint64
	out    *ttnn.Tensor
	closed bool
}

// Close frees the window's states (a no-op when they live in the encoder trace's output).
func (s *encoderState) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.out != nil {
		return s.out.Free()
	}
	return nil
}

// LoadModel loads the encoder and decoder-step programs of programs (manifests named
// EncoderProgram and DecoderProgram + ".ttbsim", compiled for the device's mesh here) onto
// dev (nil programs: ttnn.SimPrograms()), runs each once and captures their traces. It does
// not own dev.
func LoadModel(ctx context.Context, dev *ttnn.Device, programs fs.FS) (*Model, error) {
	return loadModelFrom(ctx, dev, simSource(programs))
}

// LoadMetalModel is LoadModel on the metal backend: the programs are
// <weights>/whisper-encoder.ttnn and whisper-decoder-step.ttnn, checked against their
// declarations in runners/programs (a difference is a runners.Permanent error of one line).
// tt-mlir programs capture their own traces, so they run directly.
func LoadMetalModel(ctx context.Context, dev *ttnn.Device, weights string) (*Model, error) {
	return loadModelFrom(ctx, dev, metalSource(weights))
}

func loadModelFrom(ctx context.Context, dev *ttnn.Device, src *source) (_ *Model, err error) {
	m := &Model{dev: dev, src: src, word: make([]byte, 4)}
	defer func() {
		if err != nil {
			_ = m.Close()
		}
	}()
	info := dev.Info()
	if m.enc, err = src.load(ctx, dev, EncoderProgram); err != nil {
		return nil, err
	}
	if m.dec, err = src.load(ctx, dev, DecoderProgram); err != nil {
		return nil, err
	}
	encF, err := m.enc.Function(encoderFn)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadProgram, EncoderProgram, err)
	}
	decF, err := m.dec.Function(decoderFn)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadProgram, DecoderProgram, err)
	}
	if err := m.checkIO(encF, decF); err != nil {
		return nil, err
	}
	persistent := ttnn.TensorOptions{Placement: ttnn.DRAM, Layout: ttnn.Tile, Retain: true}
	for i, t := range []**ttnn.Tensor{&m.mel, &m.ids, &m.pos} {
		desc := encF.Inputs[0]
		if i > 0 {
			desc = decF.Inputs[i-1]
		}
		if *t, err = dev.Alloc(ctx, desc, persistent); err != nil {
			return nil, fmt.Errorf("whisper: allocate %s: %w", desc.Name, err)
		}
	}
	m.melBuf = make([]byte, encF.Inputs[0].Bytes())
	m.outBuf = make([]byte, decF.Outputs[0].Bytes())
	if m.inCQ, err = inputQueue(ctx, dev); err != nil {
		return nil, err
	}
	// Compile runs: each program once on this device (a trace may only capture compiled ops).
	states, err := m.enc.Run(ctx, 0, encoderFn, m.mel)
	if err != nil {
		return nil, fmt.Errorf("whisper: compile run of %s: %w", EncoderProgram, err)
	}
	outs, err := m.dec.Run(ctx, 0, decoderFn, m.ids, m.pos, states[0])
	freeAll(states...)
	freeAll(outs...)
	if err != nil {
		return nil, fmt.Errorf("whisper: compile run of %s: %w", DecoderProgram, err)
	}
	// Capture: the encoder, then the decoder step reading the encoder trace's output.
	encTr, err := capture(ctx, dev, m.enc, encoderFn, m.mel)
	switch {
	case errors.Is(err, ttnn.ErrUnsupported):
		return m, nil // a backend that compiles its own traces: run the programs directly
	case err != nil:
		return nil, fmt.Errorf("whisper: capture %s trace (trace_region_size %d): %w", EncoderProgram, info.TraceRegionSize, err)
	}
	m.encTrace, m.states = encTr.trace, encTr.out
	logits, err := capture(ctx, dev, m.dec, decoderFn, m.ids, m.pos, m.states)
	if err != nil {
		return nil, fmt.Errorf("whisper: capture %s trace (trace_region_size %d): %w", DecoderProgram, info.TraceRegionSize, err)
	}
	m.decTrace, m.logits = logits.trace, logits.out
	return m, nil
}

// checkIO checks the programs against what the model feeds them.
func (m *Model) checkIO(enc, dec ttnn.Function) (err error) {
	m.nMels, m.nVocab, err = checkPrograms(DecoderProgram, 1, enc, dec)
	return err
}

// NMels is the number of mel bins the encoder takes.
func (m *Model) NMels() int { return m.nMels }

// NVocab is the size of the decoder's logits.
func (m *Model) NVocab() int { return m.nVocab }

// Traced reports whether the programs replay captured traces.
func (m *Model) Traced() bool { return m.decTrace != nil }

// Encode writes one window's log-mel (nMels×3000, row-major) to the device as bf16 and runs
// the encoder. The states stay on the device until the next Encode.
func (m *Model) Encode(ctx context.Context, mel []float32, nMels int) (transcribe.EncoderState, error) {
	if nMels != m.nMels || len(mel) != nMels*segment.NFrames {
		return nil, fmt.Errorf("whisper encoder: %d values of %d mel bins, the program takes %d×%d", len(mel), nMels, m.nMels, segment.NFrames)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, v := range mel {
		binary.LittleEndian.PutUint16(m.melBuf[2*i:], bf16(v))
	}
	// A device call cannot be interrupted: the context is checked between calls only.
	dctx := context.WithoutCancel(ctx)
	m.gen++
	m.seqLen = 0
	st := &encoderState{m: m, gen: m.gen}
	if err := m.mel.Write(dctx, m.inCQ, m.melBuf); err != nil {
		return nil, fmt.Errorf("whisper encoder: write log-mel: %w", err)
	}
	if m.encTrace == nil {
		if err := m.order(dctx); err != nil {
			return nil, fmt.Errorf("whisper encoder: %w", err)
		}
		outs, err := m.enc.Run(dctx, 0, encoderFn, m.mel)
		if err != nil {
			return nil, fmt.Errorf("whisper encoder: %w", err)
		}
		st.out = outs[0]
		return st, nil
	}
	if err := m.replay(dctx, m.encTrace); err != nil {
		return nil, fmt.Errorf("whisper encoder: %w", err)
	}
	return st, nil
}

// DecodeStep feeds tokens at positions offset, offset+1, ... one decoder step each and
// returns the logits of the last. Cancellation is checked before every step.
func (m *Model) DecodeStep(ctx context.Context, state transcribe.EncoderState, tokens []int, offset int) ([]float32, error) {
	st, ok := state.(*encoderState)
	switch {
	case !ok || st.m != m:
		return nil, fmt.Errorf("whisper decoder: %w: state %T is not this model's", ErrBadSequence, state)
	case st.closed || st.gen != m.gen:
		return nil, fmt.Errorf("whisper decoder: %w", ErrStaleState)
	case len(tokens) == 0:
		return nil, fmt.Errorf("whisper decoder: %w: no tokens", ErrBadSequence)
	case offset != 0 && offset != m.seqLen:
		return nil, fmt.Errorf("whisper decoder: %w: offset %d after %d tokens", ErrBadSequence, offset, m.seqLen)
	case offset+len(tokens) > nTextCtx:
		return nil, fmt.Errorf("whisper decoder: %w: %d tokens exceed n_text_ctx %d", ErrBadSequence, offset+len(tokens), nTextCtx)
	}
	dctx := context.WithoutCancel(ctx)
	m.seqLen = offset
	for i, tok := range tokens {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if tok < 0 || tok >= m.nVocab {
			return nil, fmt.Errorf("whisper decoder: %w: token %d outside the vocabulary of %d", ErrBadSequence, tok, m.nVocab)
		}
		if err := m.step(dctx, st, uint32(tok), uint32(offset+i), i == len(tokens)-1); err != nil {
			return nil, fmt.Errorf("whisper decoder step at position %d: %w", offset+i, err)
		}
		m.seqLen = offset + i + 1
	}
	logits := make([]float32, m.nVocab)
	for i := range logits {
		logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(m.outBuf[4*i:]))
	}
	return logits, nil
}

// step runs one decoder step; read copies the logits into outBuf.
func (m *Model) step(ctx context.Context, st *encoderState, tok, pos uint32, read bool) error {
	binary.LittleEndian.PutUint32(m.word, tok)
	if err := m.ids.Write(ctx, m.inCQ, m.word); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(m.word, pos)
	if err := m.pos.Write(ctx, m.inCQ, m.word); err != nil {
		return err
	}
	if m.decTrace == nil {
		if err := m.order(ctx); err != nil {
			return err
		}
		outs, err := m.dec.Run(ctx, 0, decoderFn, m.ids, m.pos, st.out)
		if err != nil {
			return err
		}
		defer freeAll(outs...)
		if read {
			return outs[0].Read(ctx, 0, m.outBuf)
		}
		return nil
	}
	if err := m.replay(ctx, m.decTrace); err != nil {
		return err
	}
	if read {
		return m.logits.Read(ctx, 0, m.outBuf)
	}
	return nil
}

// order makes queue 0 wait for the input writes on inCQ.
func (m *Model) order(ctx context.Context) error { return orderQueues(ctx, m.dev, m.inCQ) }

// orderQueues makes dev's queue 0 wait for the writes enqueued so far on queue inCQ (nothing
// to wait for when the inputs go through queue 0 too).
func orderQueues(ctx context.Context, dev *ttnn.Device, inCQ int) error {
	if inCQ == 0 {
		return nil
	}
	ev, err := dev.RecordEvent(ctx, inCQ)
	if err != nil {
		return err
	}
	return dev.WaitEvent(ctx, 0, ev)
}

// replay replays tr on queue 0 after the input writes.
func (m *Model) replay(ctx context.Context, tr *ttnn.Trace) error {
	if err := m.order(ctx); err != nil {
		return err
	}
	return tr.Replay(ctx, true)
}

// Close releases the traces, tensors and programs (not the device).
func (m *Model) Close() error {
	var errs []error
	for _, tr := range []*ttnn.Trace{m.decTrace, m.encTrace} {
		if tr != nil {
			errs = append(errs, tr.Release())
		}
	}
	for _, t := range []*ttnn.Tensor{m.logits, m.states, m.mel, m.ids, m.pos} {
		if t != nil {
			errs = append(errs, t.Free())
		}
	}
	for _, p := range []*ttnn.Program{m.dec, m.enc} {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	errs = append(errs, m.src.close())
	*m = Model{}
	return errors.Join(errs...)
}

// traced is a captured run: its trace and its (one) output.
type traced struct {
	trace *ttnn.Trace
	out   *ttnn.Tensor
}

// capture records one run of fn in a trace on queue 0.
func capture(ctx context.Context, dev *ttnn.Device, p *ttnn.Program, fn string, inputs ...*ttnn.Tensor) (traced, error) {
	tr, outs, err := simdev.Capture(ctx, dev, func(ctx context.Context) ([]*ttnn.Tensor, error) {
		return p.Run(ctx, 0, fn, inputs...)
	})
	if err != nil {
		return traced{}, err
	}
	return traced{trace: tr, out: outs[0]}, nil
}

func freeAll(ts ...*ttnn.Tensor) {
	for _, t := range ts {
		if t != nil {
			_ = t.Free()
		}
	}
}

// loadProgram writes the manifest name.ttbsim of programs to dir, compiled for mesh (its
// "mesh" line rewritten), and loads it.
func loadProgram(ctx context.Context, dev *ttnn.Device, programs fs.FS, dir, name string, mesh ttnn.MeshShape) (*ttnn.Program, error) {
	path, err := simdev.WriteManifest(programs, dir, name, mesh)
	if err != nil {
		return nil, fmt.Errorf("whisper: %w", err)
	}
	p, err := dev.LoadProgram(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("whisper: load program %s: %w", name, err)
	}
	return p, nil
}

// ProgramVocab reads n_vocab (the last dimension of the decoder step's "logits" output) from
// the decoder-step manifest in programs, without a device.
func ProgramVocab(programs fs.FS) (int, error) {
	f, err := programs.Open(DecoderProgram + ".ttbsim")
	if err != nil {
		return 0, fmt.Errorf("whisper: program %s: %w", DecoderProgram, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fs := strings.Fields(line)
		if len(fs) >= 4 && fs[0] == "output" && fs[1] == "logits" {
			n, err := strconv.Atoi(fs[len(fs)-1])
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("%w: %s: bad logits dimension %q", ErrBadProgram, DecoderProgram, fs[len(fs)-1])
			}
			return n, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("whisper: program %s: %w", DecoderProgram, err)
	}
	return 0, fmt.Errorf("%w: %s has no logits output", ErrBadProgram, DecoderProgram)
}

// bf16 rounds a float32 to bfloat16 bits (round to nearest even; NaN stays NaN).
func bf16(v float32) uint16 {
	b := math.Float32bits(v)
	if v != v {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
