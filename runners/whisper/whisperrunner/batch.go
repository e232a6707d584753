package whisperrunner

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper/segment"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/transcribe"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// padPosition is the position of a padding row in a batched decoder step: the device leaves
// that row's KV cache alone and its logits are ignored.
const padPosition = math.MaxUint32

// maxRows bounds the batch sizes looked for among the programs (the simulator's limit).
const maxRows = 32

// BatchModel runs up to Rows() windows per device step: each row has its own log-mel input,
// encoder trace and encoder states (encoder_hidden_states_<row>), and the decoder step of
// batch size Rows() (BatchSize) is captured as a trace at load, reading every row's states.
// It serves that one batch size: a device keeps each program's KV caches, so a row's
// sequence has to stay on one program. A transcription runs on a row through Lane(row), a
// transcribe.Model; the lanes' DecodeStep calls meet in lock-step device steps: a step runs
// when every live lane (Begin to Finish) waits on one, feeding one token per waiting row;
// the other rows are padding (position 0xFFFFFFFF) and their logits are ignored. A lane
// whose context ends while it waits leaves the step; the others go on.
type BatchModel struct {
	dev   *ttnn.Device
	src   *source
	enc   *ttnn.Program
	steps []*batchStep // by ascending size
	rows  []*batchRow
	inCQ  int
	nMels int
	nVoc  int

	mu       sync.Mutex // the device and the lanes' state
	alive    []bool
	pending  []*stepReq
	nAlive   int
	nPending int
	steps0   uint64 // device steps run
	melBuf   []byte
}

type batchStep struct {
	size     int
	prog     *ttnn.Program
	ids, pos *ttnn.Tensor
	trace    *ttnn.Trace
	logits   *ttnn.Tensor // the trace's output
	idsBuf   []byte
	posBuf   []byte
	outBuf   []byte
}

type batchRow struct {
	mel    *ttnn.Tensor
	trace  *ttnn.Trace
	states *ttnn.Tensor // the trace's output, or (untraced) the last encoder run's
	gen    uint64
	seqLen int
}

type stepReq struct {
	tok, pos uint32
	read     bool
	logits   []float32
	err      error
	done     chan struct{}
}

// stepInputs are the inputs of a step: its tokens, positions and the first size rows' states.
func (m *BatchModel) stepInputs(s *batchStep) []*ttnn.Tensor {
	in := []*ttnn.Tensor{s.ids, s.pos}
	for r := 0; r < s.size; r++ {
		in = append(in, m.rows[r].states)
	}
	return in
}

// Rows is the number of windows a device step takes at most.
func (m *BatchModel) Rows() int { return len(m.rows) }

// Sizes are the batch sizes whose decoder steps are loaded (Rows()).
func (m *BatchModel) Sizes() []int {
	out := make([]int, len(m.steps))
	for i, s := range m.steps {
		out[i] = s.size
	}
	return out
}

// NMels is the number of mel bins the encoder takes.
func (m *BatchModel) NMels() int { return m.nMels }

// NVocab is the size of each row's logits.
func (m *BatchModel) NVocab() int { return m.nVoc }

// Traced reports whether the programs replay captured traces.
func (m *BatchModel) Traced() bool { return len(m.rows) > 0 && m.rows[0].trace != nil }

// Steps is the number of decoder device steps run so far.
func (m *BatchModel) Steps() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.steps0
}

// Begin makes a lane of row live: device steps wait for it until Finish.
func (m *BatchModel) Begin(row int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.alive[row] {
		m.alive[row] = true
		m.nAlive++
	}
}

// Finish ends the lane of row; a step the other lanes wait on runs when they all do.
func (m *BatchModel) Finish(row int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.alive[row] {
		return
	}
	m.alive[row] = false
	m.nAlive--
	if req := m.pending[row]; req != nil { // cannot happen: a lane waits for its own steps
		m.pending[row] = nil
		m.nPending--
		req.err = fmt.Errorf("whisper decoder: %w: lane finished while waiting", ErrBadSequence)
		close(req.done)
	}
	if m.nPending > 0 && m.nPending == m.nAlive {
		m.stepLocked()
	}
}

// Lane is the transcribe.Model of row (0 <= row < Rows()); use it between Begin and Finish.
func (m *BatchModel) Lane(row int) transcribe.Model { return &lane{m: m, row: row} }

type lane struct {
	m   *BatchModel
	row int
}

type laneState struct {
	l      *lane
	gen    uint64
	closed bool
}

func (s *laneState) Close() error {
	s.closed = true
	return nil
}

// Encode writes one window's log-mel to the lane's row and runs the encoder into that row's
// states; the other rows keep theirs.
func (l *lane) Encode(ctx context.Context, mel []float32, nMels int) (transcribe.EncoderState, error) {
	m := l.m
	if nMels != m.nMels || len(mel) != nMels*segment.NFrames {
		return nil, fmt.Errorf("whisper encoder: %d values of %d mel bins, the program takes %d×%d", len(mel), nMels, m.nMels, segment.NFrames)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, v := range mel {
		binary.LittleEndian.PutUint16(m.melBuf[2*i:], bf16(v))
	}
	dctx := context.WithoutCancel(ctx)
	row := m.rows[l.row]
	row.gen++
	row.seqLen = 0
	if err := row.mel.Write(dctx, m.inCQ, m.melBuf); err != nil {
		return nil, fmt.Errorf("whisper encoder: write log-mel: %w", err)
	}
	if err := m.order(dctx); err != nil {
		return nil, fmt.Errorf("whisper encoder: %w", err)
	}
	if row.trace != nil {
		if err := row.trace.Replay(dctx, true); err != nil {
			return nil, fmt.Errorf("whisper encoder: %w", err)
		}
	} else {
		outs, err := m.enc.Run(dctx, 0, encoderFn, row.mel)
		if err != nil {
			return nil, fmt.Errorf("whisper encoder: %w", err)
		}
		freeAll(row.states)
		row.states = outs[0]
	}
	return &laneState{l: l, gen: row.gen}, nil
}

// DecodeStep feeds tokens at positions offset, offset+1, ... one batched device step each and
// returns the logits of the last.
func (l *lane) DecodeStep(ctx context.Context, state transcribe.EncoderState, tokens []int, offset int) ([]float32, error) {
	m := l.m
	st, ok := state.(*laneState)
	m.mu.Lock()
	row := m.rows[l.row]
	var bad error
	switch {
	case !ok || st.l != l:
		bad = fmt.Errorf("whisper decoder: %w: state %T is not this lane's", ErrBadSequence, state)
	case st.closed || st.gen != row.gen:
		bad = fmt.Errorf("whisper decoder: %w", ErrStaleState)
	case len(tokens) == 0:
		bad = fmt.Errorf("whisper decoder: %w: no tokens", ErrBadSequence)
	case offset != 0 && offset != row.seqLen:
		bad = fmt.Errorf("whisper decoder: %w: offset %d after %d tokens", ErrBadSequence, offset, row.seqLen)
	case offset+len(tokens) > nTextCtx:
		bad = fmt.Errorf("whisper decoder: %w: %d tokens exceed n_text_ctx %d", ErrBadSequence, offset+len(tokens), nTextCtx)
	case !m.alive[l.row]:
		bad = fmt.Errorf("whisper decoder: %w: lane %d not begun", ErrBadSequence, l.row)
	}
	if bad == nil {
		row.seqLen = offset
	}
	m.mu.Unlock()
	if bad != nil {
		return nil, bad
	}
	var logits []float32
	for i, tok := range tokens {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if tok < 0 || tok >= m.nVoc {
			return nil, fmt.Errorf("whisper decoder: %w: token %d outside the vocabulary of %d", ErrBadSequence, tok, m.nVoc)
		}
		req := &stepReq{tok: uint32(tok), pos: uint32(offset + i), read: i == len(tokens)-1, done: make(chan struct{})}
		if err := m.wait(ctx, l.row, req); err != nil {
			return nil, err
		}
		if req.err != nil {
			return nil, fmt.Errorf("whisper decoder step at position %d: %w", offset+i, req.err)
		}
		m.mu.Lock()
		row.seqLen = offset + i + 1
		m.mu.Unlock()
		logits = req.logits
	}
	return logits, nil
}

// wait queues req for row's next step and waits for it; a context that ends first takes it
// out of the step unless the step already runs.
func (m *BatchModel) wait(ctx context.Context, row int, req *stepReq) error {
	m.mu.Lock()
	m.pending[row] = req
	m.nPending++
	if m.nPending == m.nAlive {
		m.stepLocked()
	}
	m.mu.Unlock()
	select {
	case <-req.done:
		return nil
	case <-ctx.Done():
	}
	m.mu.Lock()
	if m.pending[row] == req {
		m.pending[row] = nil
		m.nPending--
		m.mu.Unlock()
		return ctx.Err()
	}
	m.mu.Unlock()
	<-req.done // taken by a step that has run (steps run under mu)
	return nil
}

// stepLocked runs one device step for the waiting rows (m.mu held) and completes them.
func (m *BatchModel) stepLocked() {
	top, read := -1, false
	for r, req := range m.pending {
		if req != nil {
			top = r
			read = read || req.read
		}
	}
	if top < 0 {
		return
	}
	s := m.steps[0]
	for r := 0; r < s.size; r++ {
		tok, pos := uint32(0), uint32(padPosition)
		if req := m.pending[r]; req != nil {
			tok, pos = req.tok, req.pos
		}
		binary.LittleEndian.PutUint32(s.idsBuf[4*r:], tok)
		binary.LittleEndian.PutUint32(s.posBuf[4*r:], pos)
	}
	err := m.runStep(s, read)
	m.steps0++
	for r, req := range m.pending {
		if req == nil {
			continue
		}
		req.err = err
		if err == nil && req.read {
			req.logits = make([]float32, m.nVoc)
			base := 4 * r * m.nVoc
			for i := range req.logits {
				req.logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(s.outBuf[base+4*i:]))
			}
		}
		m.pending[r] = nil
		close(req.done)
	}
	m.nPending = 0
}

// runStep writes a step's inputs and runs it (m.mu held); read copies the logits to outBuf.
func (m *BatchModel) runStep(s *batchStep, read bool) error {
	ctx := context.Background()
	if err := s.ids.Write(ctx, m.inCQ, s.idsBuf); err != nil {
		return err
	}
	if err := s.pos.Write(ctx, m.inCQ, s.posBuf); err != nil {
		return err
	}
	if err := m.order(ctx); err != nil {
		return err
	}
	if s.trace == nil {
		outs, err := s.prog.Run(ctx, 0, decoderFn, m.stepInputs(s)...)
		if err != nil {
			return err
		}
		defer freeAll(outs...)
		if read {
			return outs[0].Read(ctx, 0, s.outBuf)
		}
		return nil
	}
	if err := s.trace.Replay(ctx, true); err != nil {
		return err
	}
	if read {
		return s.logits.Read(ctx, 0, s.outBuf)
	}
	return nil
}

// order makes queue 0 wait for the input writes on inCQ.
func (m *BatchModel) order(ctx context.Context) error { return orderQueues(ctx, m.dev, m.inCQ) }

// Close releases the traces, tensors and programs (not the device).
func (m *BatchModel) Close() error {
	var errs []error
	for _, s := range m.steps {
		if s.trace != nil {
			errs = append(errs, s.trace.Release())
		}
	}
	for _, r := range m.rows {
		if r.trace != nil {
			errs = append(errs, r.trace.Release())
		}
	}
	for _, s := range m.steps {
		for _, t := range []*ttnn.Tensor{s.logits, s.ids, s.pos} {
			if t != nil {
				errs = append(errs, t.Free())
			}
		}
	}
	for _, r := range m.rows {
		for _, t := range []*ttnn.Tensor{r.states, r.mel} {
			if t != nil {
				errs = append(errs, t.Free())
			}
		}
	}
	for _, s := range m.steps {
		if s.prog != nil {
			errs = append(errs, s.prog.Close())
		}
	}
	if m.enc != nil {
		errs = append(errs, m.enc.Close())
	}
	errs = append(errs, m.src.close())
	m.steps, m.rows, m.enc = nil, nil, nil
	return errors.Join(errs...)
}
