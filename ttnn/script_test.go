//go:build cgo

package ttnn

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Ids of the large-v3 vocabulary (n_vocab 51866) the shipped decoder-step program emits.
const (
	v3Vocab    = 51866
	v3EOT      = 50257
	v3SOT      = 50258
	v3En       = 50259
	v3De       = 50261
	v3Translat = 50359 // <|translate|>
	v3Transcr  = 50360 // <|transcribe|>
	v3SOTPrev  = 50362
	v3NoSpeech = 50363
	v3TS0      = 50365 // <|0.00|>
)

// decoderStep drives the shipped whisper-decoder-step program one token at a time.
type decoderStep struct {
	t         *testing.T
	prog      *Program
	ids, pos  *Tensor
	enc       *Tensor
	trace     *Trace
	traceOuts []*Tensor
}

// newDecoderStep opens a 1x1 device and loads the decoder step (TTB_SIM_SCRIPT as set by the
// caller); encFill seeds the encoder states.
func newDecoderStep(t *testing.T, encFill byte) *decoderStep {
	t.Helper()
	d := openDev(t, Options{Mesh: MeshShape{Rows: 1, Cols: 1}, CommandQueues: 1})
	p, err := d.LoadProgram(bg, filepath.Join("programs", "whisper-decoder-step.ttbsim"))
	require.NoError(t, err)
	fn, err := p.Function("step")
	require.NoError(t, err)
	s := &decoderStep{t: t, prog: p}
	s.ids = upload(t, d, fn.Inputs[0], make([]byte, 4), true)
	s.pos = upload(t, d, fn.Inputs[1], make([]byte, 4), true)
	enc := make([]byte, fn.Inputs[2].Bytes())
	for i := range enc {
		enc[i] = encFill + byte(i%7)
	}
	s.enc = upload(t, d, fn.Inputs[2], enc, true)
	return s
}

// capture runs the step once (compile) and captures it in a trace; later steps replay it.
func (s *decoderStep) capture(d *Device) {
	s.t.Helper()
	_ = s.step(0, 0) // the compile run: token 0 at position 0 begins no decode
	tr, err := d.BeginTrace(bg, 0)
	require.NoError(s.t, err)
	outs, err := s.prog.Run(bg, 0, "step", s.ids, s.pos, s.enc)
	require.NoError(s.t, err)
	require.NoError(s.t, tr.End(bg))
	s.trace, s.traceOuts = tr, outs
	s.t.Cleanup(func() {
		require.NoError(s.t, tr.Release())
		for _, o := range outs {
			require.NoError(s.t, o.Free())
		}
	})
}

// run feeds token id at pos and returns the logits or the run's error.
func (s *decoderStep) run(id, pos uint32) ([]float32, error) {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, id)
	if err := s.ids.Write(bg, 0, b); err != nil {
		return nil, err
	}
	binary.LittleEndian.PutUint32(b, pos)
	if err := s.pos.Write(bg, 0, b); err != nil {
		return nil, err
	}
	var out *Tensor
	if s.trace != nil {
		if err := s.trace.Replay(bg, true); err != nil {
			return nil, err
		}
		out = s.traceOuts[0]
	} else {
		outs, err := s.prog.Run(bg, 0, "step", s.ids, s.pos, s.enc)
		if err != nil {
			return nil, err
		}
		defer func() {
			for _, o := range outs {
				require.NoError(s.t, o.Free())
			}
		}()
		out = outs[0]
	}
	raw := read(s.t, out)
	logits := make([]float32, len(raw)/4)
	for i := range logits {
		logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return logits, nil
}

func (s *decoderStep) step(id, pos uint32) []float32 {
	s.t.Helper()
	l, err := s.run(id, pos)
	require.NoError(s.t, err)
	return l
}

func argmax(l []float32) int {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return best
}

// softmaxAt is softmax(l)[i] in float64.
func softmaxAt(l []float32, i int) float64 {
	m := math.Inf(-1)
	for _, v := range l {
		m = math.Max(m, float64(v))
	}
	var sum float64
	for _, v := range l {
		sum += math.Exp(float64(v) - m)
	}
	return math.Exp(float64(l[i])-m) / sum
}

// greedyDecode feeds prefix from position 0, then the argmax of each step until EOT (or 30
// tokens), and returns the sampled tokens (EOT included) and the logits at the last prefix
// token.
func (s *decoderStep) greedyDecode(prefix []uint32) ([]int, []float32) {
	s.t.Helper()
	var logits []float32
	for i, id := range prefix {
		logits = s.step(id, uint32(i))
	}
	first := logits
	var got []int
	for pos := len(prefix); len(got) < 30; pos++ {
		next := argmax(logits)
		got = append(got, next)
		if next == v3EOT {
			break
		}
		logits = s.step(uint32(next), uint32(pos))
	}
	return got, first
}

func writeScript(t *testing.T, text string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.txt")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	t.Setenv("TTB_SIM_SCRIPT", path)
}

func TestScriptUnscriptedDecode(t *testing.T) {
	t.Setenv("TTB_SIM_SCRIPT", "")
	words := []int{639, 307, 41713, 6218, 1230} // " This is simulated speech number"
	numbers := []int{472, 732, 1045, 1451, 1732, 2309, 3407, 3180, 4949, 2064, 21090, 14390}
	var seen []int
	for _, traced := range []bool{false, true} {
		for _, fill := range []byte{1, 1, 2} {
			t.Run(fmt.Sprintf("traced=%v fill=%d", traced, fill), func(t *testing.T) {
				s := newDecoderStep(t, fill)
				if traced {
					d := s.prog.dev
					s.capture(d)
				}
				got, first := s.greedyDecode([]uint32{v3SOT, v3En, v3Transcr})
				require.Len(t, got, 10, "tokens %v", got)
				require.Equal(t, v3TS0, got[0])
				require.Equal(t, words, got[1:6])
				require.Contains(t, numbers, got[6])
				require.Equal(t, []int{13, v3TS0 + 100, v3EOT}, got[7:])
				require.Len(t, first, v3Vocab)
				seen = append(seen, got[6])
				// Language detection: every language token ties, so the first (<|en|>) wins.
				det := s.step(v3SOT, 0)
				require.InDelta(t, 0.01, softmaxAt(det, v3NoSpeech), 1e-5, "no-speech probability at the SOT position")
				require.Equal(t, det[v3En], det[v3De])
			})
		}
	}
	require.Len(t, seen, 6)
	require.Equal(t, seen[0], seen[1], "same encoder states, same decode")
	require.Equal(t, seen[0], seen[3], "a trace replay decodes as a run does")
	require.Equal(t, seen[2], seen[5])
}

func TestScriptDecodesInOrder(t *testing.T) {
	// Each <|startoftranscript|> consumes the next decode, so a retry of the same window (a
	// temperature fallback) gets the next answer.
	writeScript(t, fmt.Sprintf(`ttb-sim-script 1
# language detection
decode
expect %[1]d
emit %[2]d
# first try
decode
expect %[1]d %[2]d %[3]d
emit %[4]d 440 440 440 %[5]d
nospeech 0.25
# the retry
decode
expect %[1]d %[2]d %[3]d
emit %[4]d 441 %[5]d
`, v3SOT, v3De, v3Transcr, v3TS0, v3TS0+50))
	s := newDecoderStep(t, 3)
	s.capture(s.prog.dev)

	det := s.step(v3SOT, 0)
	require.Equal(t, v3De, argmax(det))
	// At the SOT position the favoured token shares what <|nospeech|> leaves.
	require.InDelta(t, math.Exp(-0.05)*(1-0.01), softmaxAt(det, v3De), 1e-4)

	sot := []uint32{v3SOT, v3De, v3Transcr}
	got, _ := s.greedyDecode(sot)
	require.Equal(t, []int{v3TS0, 440, 440, 440, v3TS0 + 50, v3EOT}, got)

	got, _ = s.greedyDecode(sot)
	require.Equal(t, []int{v3TS0, 441, v3TS0 + 50, v3EOT}, got)

	_, err := s.run(v3SOT, 0)
	require.ErrorContains(t, err, "but the script has only 3")
}

func TestScriptLogProbs(t *testing.T) {
	writeScript(t, fmt.Sprintf(`ttb-sim-script 1
decode
expect %[3]d %[4]d %[5]d
emit %[1]d 440:-2.5 %[2]d
nospeech 0.25
logprob -1.5
# a new sequence from position 0 (the prompt) ends the decode above
decode
prompt 1029 2020
expect %[3]d %[4]d %[5]d
emit %[1]d 441 %[2]d
nospeech 0
`, v3TS0, v3TS0+50, v3SOT, v3En, v3Transcr))
	s := newDecoderStep(t, 4)
	lp := func(l []float32, id int) float64 { return math.Log(softmaxAt(l, id)) }

	at := s.step(v3SOT, 0)
	require.InDelta(t, 0.25, softmaxAt(at, v3NoSpeech), 1e-5)
	_ = s.step(v3En, 1)
	at = s.step(v3Transcr, 2)
	require.Equal(t, v3TS0, argmax(at))
	require.InDelta(t, -1.5, lp(at, v3TS0), 1e-4, "the decode's logprob")
	at = s.step(v3TS0, 3)
	require.Equal(t, 440, argmax(at))
	require.InDelta(t, -2.5, lp(at, 440), 1e-4, "the token's own logprob")
	at = s.step(440, 4)
	require.Equal(t, v3TS0+50, argmax(at))
	at = s.step(v3TS0+50, 5)
	require.Equal(t, v3EOT, argmax(at), "EOT after the script's tokens")

	// The second decode: prompt conditioning, then the sot sequence it expects.
	seq := []uint32{v3SOTPrev, 1029, 2020, v3SOT, v3En, v3Transcr}
	for i, id := range seq {
		at = s.step(id, uint32(i))
		if id == v3SOT {
			require.Equal(t, 0.0, softmaxAt(at, v3NoSpeech))
		}
	}
	require.Equal(t, v3TS0, argmax(at))
	require.InDelta(t, -0.05, lp(at, v3TS0), 1e-4, "the default logprob")
}

func TestScriptErrors(t *testing.T) {
	tests := []struct {
		name   string
		script string
		feed   []uint32 // tokens from position 0
		want   string
	}{
		{
			name:   "wrong language in the sot sequence",
			script: fmt.Sprintf("ttb-sim-script 1\ndecode\nexpect %d %d %d\nemit 440\n", v3SOT, v3En, v3Transcr),
			feed:   []uint32{v3SOT, v3De},
			want:   fmt.Sprintf("sot sequence token 1 is %d, the script expects %d", v3De, v3En),
		},
		{
			name:   "translate instead of transcribe",
			script: fmt.Sprintf("ttb-sim-script 1\ndecode\nexpect %d %d %d\n", v3SOT, v3En, v3Transcr),
			feed:   []uint32{v3SOT, v3En, v3Translat},
			want:   fmt.Sprintf("token 2 is %d, the script expects %d", v3Translat, v3Transcr),
		},
		{
			name:   "unexpected prompt",
			script: "ttb-sim-script 1\ndecode\nprompt\n",
			feed:   []uint32{v3SOTPrev, 220, v3SOT},
			want:   "2 tokens before <|startoftranscript|>, the script expects 0",
		},
		{
			name:   "wrong prompt",
			script: "ttb-sim-script 1\ndecode\nprompt 1029\n",
			feed:   []uint32{v3SOTPrev, 1030, v3SOT},
			want:   "prompt token 1 is 1030, the script expects 1029",
		},
		{
			name:   "script exhausted",
			script: "ttb-sim-script 1\ndecode\nemit 440\n",
			feed:   []uint32{v3SOT, v3SOT},
			want:   "decode 2 begins (<|startoftranscript|> at position 1) but the script has only 1",
		},
		{
			name:   "gap in the cache",
			script: "ttb-sim-script 1\ndecode\n",
			feed:   []uint32{v3SOT, math.MaxUint32, 7},
			want:   "the KV cache has a gap",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			writeScript(t, tc.script)
			s := newDecoderStep(t, 5)
			var err error
			pos := uint32(0)
			for _, id := range tc.feed {
				if id == math.MaxUint32 { // skip a position
					pos++
					continue
				}
				if _, err = s.run(id, pos); err != nil {
					break
				}
				pos++
			}
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestScriptParseErrors(t *testing.T) {
	tests := []struct{ name, script, want string }{
		{"no header", "decode\n", `first line must be "ttb-sim-script 1"`},
		{"empty", "# nothing\n", "empty script"},
		{"keyword before decode", "ttb-sim-script 1\nemit 1\n", `"emit" before the first "decode"`},
		{"bad id", "ttb-sim-script 1\ndecode\nemit 12x\n", `bad token id "12x"`},
		{"negative id", "ttb-sim-script 1\ndecode\nemit -3\n", `bad token id "-3"`},
		{"positive logprob", "ttb-sim-script 1\ndecode\nemit 5:0.5\n", "bad log probability"},
		{"logprob on expect", "ttb-sim-script 1\ndecode\nexpect 5:-1\n", "only allowed after emit"},
		{"nospeech of 1", "ttb-sim-script 1\ndecode\nnospeech 1\n", "want a probability in [0, 1)"},
		{"logprob of 0", "ttb-sim-script 1\ndecode\nlogprob 0\n", "want a number below 0"},
		{"repeated emit", "ttb-sim-script 1\ndecode\nemit 1\nemit 2\n", "repeated keyword"},
		{"empty expect", "ttb-sim-script 1\ndecode\nexpect\n", "needs at least"},
		{"unknown keyword", "ttb-sim-script 1\ndecode\nfavour 3\n", `unknown keyword "favour"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			writeScript(t, tc.script)
			d := openDev(t, Options{Mesh: MeshShape{Rows: 1, Cols: 1}})
			_, err := d.LoadProgram(bg, filepath.Join("programs", "whisper-decoder-step.ttbsim"))
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.ErrorContains(t, err, tc.want)
			require.True(t, strings.Contains(err.Error(), "script"), err.Error())
		})
	}
	t.Run("missing file", func(t *testing.T) {
		t.Setenv("TTB_SIM_SCRIPT", filepath.Join(t.TempDir(), "absent"))
		d := openDev(t, Options{Mesh: MeshShape{Rows: 1, Cols: 1}})
		_, err := d.LoadProgram(bg, filepath.Join("programs", "whisper-decoder-step.ttbsim"))
		require.ErrorIs(t, err, ErrNotFound)
	})
}

// FuzzScript feeds arbitrary scripts to the parser and a short decode to the decoder step:
// load and steps may fail, but only with ErrInvalidArgument (or ErrNotFound), never a crash.
// Run by hand: go test -run XXX -fuzz FuzzScript ./ttnn
func FuzzScript(f *testing.F) {
	for _, seed := range []string{
		"ttb-sim-script 1\ndecode\nexpect 50258 50259 50360\nemit 50365 440:-2.5 50415\nnospeech 0.8\nlogprob -1.5\n",
		"ttb-sim-script 1\ndecode\nprompt\nemit 13\ndecode\nprompt 1029 2020\n",
		"ttb-sim-script 1\n# only a comment\n",
		"ttb-sim-script 1\ndecode\nemit 99999999\n",
		"ttb-sim-script 1\ndecode\nemit 1:-1e309 2:nan\n",
	} {
		f.Add([]byte(seed))
	}
	d, err := Open(bg, Options{Mesh: MeshShape{Rows: 1, Cols: 1}})
	require.NoError(f, err)
	f.Cleanup(func() { require.NoError(f, d.Close()) })
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, script []byte) {
		path := filepath.Join(dir, "script.txt")
		require.NoError(t, os.WriteFile(path, script, 0o600))
		require.NoError(t, os.Setenv("TTB_SIM_SCRIPT", path))
		defer os.Unsetenv("TTB_SIM_SCRIPT")
		p, err := d.LoadProgram(bg, filepath.Join("programs", "whisper-decoder-step.ttbsim"))
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidArgument)
			return
		}
		defer p.Close()
		fn, err := p.Function("step")
		require.NoError(t, err)
		var ins []*Tensor
		for _, in := range fn.Inputs {
			tt, err := d.Alloc(bg, in, TensorOptions{Retain: true})
			require.NoError(t, err)
			defer func() { _ = tt.Free() }()
			ins = append(ins, tt)
		}
		b := make([]byte, 4)
		for pos, id := range []uint32{v3SOTPrev, 1029, v3SOT, v3En, v3Transcr, v3TS0, 440, v3SOT, v3De} {
			binary.LittleEndian.PutUint32(b, id)
			require.NoError(t, ins[0].Write(bg, 0, b))
			binary.LittleEndian.PutUint32(b, uint32(pos))
			require.NoError(t, ins[1].Write(bg, 0, b))
			outs, err := p.Run(bg, 0, "step", ins...)
			if err != nil {
				require.ErrorIs(t, err, ErrInvalidArgument)
				return
			}
			for _, o := range outs {
				require.NoError(t, o.Free())
			}
		}
	})
}

// batchStep drives whisper-decoder-step-b2: one token per row per run, row r reading the
// encoder states filled with fills[r].
type batchStep struct {
	t        *testing.T
	prog     *Program
	ids, pos *Tensor
	enc      []*Tensor
}

func newBatchStep(t *testing.T, fills ...byte) *batchStep {
	t.Helper()
	d := openDev(t, Options{Mesh: MeshShape{Rows: 1, Cols: 1}, CommandQueues: 1})
	p, err := d.LoadProgram(bg, filepath.Join("programs", "whisper-decoder-step-b2.ttbsim"))
	require.NoError(t, err)
	fn, err := p.Function("step")
	require.NoError(t, err)
	require.Len(t, fn.Inputs, 2+len(fills))
	s := &batchStep{t: t, prog: p}
	s.ids = upload(t, d, fn.Inputs[0], make([]byte, 4*len(fills)), true)
	s.pos = upload(t, d, fn.Inputs[1], make([]byte, 4*len(fills)), true)
	for r, fill := range fills {
		enc := make([]byte, fn.Inputs[2+r].Bytes())
		for i := range enc {
			enc[i] = fill + byte(i%7)
		}
		s.enc = append(s.enc, upload(t, d, fn.Inputs[2+r], enc, true))
	}
	return s
}

// run feeds ids[r] at pos[r] to each row (pos 0xFFFFFFFF: padding) and returns each row's logits.
func (s *batchStep) run(ids, pos []uint32) ([][]float32, error) {
	b := make([]byte, 4*len(ids))
	for r, id := range ids {
		binary.LittleEndian.PutUint32(b[4*r:], id)
	}
	if err := s.ids.Write(bg, 0, b); err != nil {
		return nil, err
	}
	for r, p := range pos {
		binary.LittleEndian.PutUint32(b[4*r:], p)
	}
	if err := s.pos.Write(bg, 0, b); err != nil {
		return nil, err
	}
	outs, err := s.prog.Run(bg, 0, "step", append([]*Tensor{s.ids, s.pos}, s.enc...)...)
	if err != nil {
		return nil, err
	}
	raw := read(s.t, outs[0])
	require.NoError(s.t, outs[0].Free())
	rows := make([][]float32, len(ids))
	for r := range rows {
		rows[r] = make([]float32, v3Vocab)
		for i := range rows[r] {
			rows[r][i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(r*v3Vocab+i):]))
		}
	}
	return rows, nil
}

const pad = math.MaxUint32

func TestScriptBatchedRows(t *testing.T) {
	// Rows take the decodes in the order they begin them (in one step: by row); each row keeps
	// its own sequence, and a padding row neither steps nor disturbs it.
	writeScript(t, fmt.Sprintf(`ttb-sim-script 1
decode
emit %[1]d 440 441 %[2]d
decode
emit %[1]d 500 %[2]d
decode
emit %[1]d 600 %[2]d
`, v3TS0, v3TS0+50))
	s := newBatchStep(t, 1, 2)
	l, err := s.run([]uint32{v3SOT, v3SOT}, []uint32{0, 0})
	require.NoError(t, err)
	require.Equal(t, []int{v3TS0, v3TS0}, []int{argmax(l[0]), argmax(l[1])})
	l, err = s.run([]uint32{v3TS0, v3TS0}, []uint32{1, 1})
	require.NoError(t, err)
	require.Equal(t, []int{440, 500}, []int{argmax(l[0]), argmax(l[1])})
	l, err = s.run([]uint32{0, 500}, []uint32{pad, 2})
	require.NoError(t, err)
	require.Equal(t, make([]float32, v3Vocab), l[0], "a padding row's logits are zero")
	require.Equal(t, v3TS0+50, argmax(l[1]))
	l, err = s.run([]uint32{440, v3SOT}, []uint32{2, 0})
	require.NoError(t, err)
	require.Equal(t, 441, argmax(l[0]), "row 0 goes on after the padded step")
	require.Equal(t, v3TS0, argmax(l[1]), "row 1 restarted: the third decode")
	l, err = s.run([]uint32{pad, v3TS0}, []uint32{pad, 1})
	require.NoError(t, err)
	require.Equal(t, 600, argmax(l[1]))
	_, err = s.run([]uint32{0, 0}, []uint32{pad, 5})
	require.ErrorContains(t, err, "row 1: decoder step at position 5 after 2 tokens")
}

func TestScriptBatchedUnscriptedRows(t *testing.T) {
	// Without a script each row's decode comes from its own encoder states: row r of a batch
	// says what a batch-1 step on the same states says.
	t.Setenv("TTB_SIM_SCRIPT", "")
	sot := []uint32{v3SOT, v3En, v3Transcr}
	var alone [][]int
	for _, fill := range []byte{1, 5} {
		t.Run(fmt.Sprintf("alone fill=%d", fill), func(t *testing.T) { // one device at a time
			got, _ := newDecoderStep(t, fill).greedyDecode(sot)
			alone = append(alone, got)
		})
	}
	require.Len(t, alone, 2)
	require.NotEqual(t, alone[0], alone[1], "the fills give different decodes")
	s := newBatchStep(t, 1, 5)
	var got [2][]int
	var done [2]bool
	for fed := 0; !done[0] || !done[1]; fed++ {
		var ids, pos [2]uint32
		for r := range 2 {
			switch {
			case done[r]:
				ids[r], pos[r] = 0, pad
			case fed < len(sot):
				ids[r], pos[r] = sot[fed], uint32(fed)
			default:
				ids[r], pos[r] = uint32(got[r][len(got[r])-1]), uint32(fed)
			}
		}
		l, err := s.run(ids[:], pos[:])
		require.NoError(t, err)
		for r := range 2 {
			if done[r] || fed < len(sot)-1 {
				continue
			}
			got[r] = append(got[r], argmax(l[r]))
			done[r] = got[r][len(got[r])-1] == v3EOT || len(got[r]) == 30
		}
	}
	require.Equal(t, alone[0], got[0])
	require.Equal(t, alone[1], got[1])
}
