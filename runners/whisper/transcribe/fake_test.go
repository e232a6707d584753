package transcribe

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
)

// margin is the logit the fake model gives the token it favours over the others (all 0).
// Sampling at temperature T sees margin/T, so even T = 1 picks it with probability
// 1 - n_vocab*e^-30.
const margin = 30

// flat in a script means "favour nothing at this position": every logit is 0.
const flat = -1

// fakeWindow scripts the model for one Encode call. The fake is causal, as a real decoder:
// the logits at a position depend only on the tokens up to it.
type fakeWindow struct {
	// language is favoured at the <|startoftranscript|> position (what detection reads);
	// 0: none.
	language int
	// noSpeech is added to the <|nospeech|> logit at the <|startoftranscript|> position.
	noSpeech float32
	// attempts are the tokens favoured from the first sampled position on (the position
	// of the last sot-sequence token), one list per decoding attempt in order. Past the end
	// of a list the model favours EOT.
	attempts [][]int
}

// fakeModel is a scripted whisper model: the logits at every position favour the scripted
// token, whatever the filters later allow. It records what it was fed.
type fakeModel struct {
	tok     *whispertokenizer.Tokenizer
	windows []fakeWindow
	// onStep, when set, runs at the start of every DecodeStep with the 1-based step count.
	onStep func(n int)

	mu      sync.Mutex
	encodes int
	steps   int
	closed  int
	fed     [][]int // the full token sequence of every attempt, in order
	mels    [][]float32
}

type fakeState struct {
	m       *fakeModel
	w       *fakeWindow
	attempt int // attempts started on this state
	seq     []int
	closed  bool
}

func (s *fakeState) Close() error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if s.closed {
		return fmt.Errorf("fake state closed twice")
	}
	s.closed = true
	s.m.closed++
	return nil
}

func (m *fakeModel) Encode(ctx context.Context, mel []float32, nMels int) (EncoderState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(mel) != nMels*3000 {
		return nil, fmt.Errorf("fake: mel of %d values for %d mels", len(mel), nMels)
	}
	if m.encodes >= len(m.windows) {
		return nil, fmt.Errorf("fake: encode %d not scripted", m.encodes)
	}
	st := &fakeState{m: m, w: &m.windows[m.encodes]}
	m.encodes++
	m.mels = append(m.mels, slices.Clone(mel))
	return st, nil
}

func (m *fakeModel) DecodeStep(ctx context.Context, state EncoderState, tokens []int, offset int) ([]float32, error) {
	m.mu.Lock()
	m.steps++
	n := m.steps
	hook := m.onStep
	m.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	st := state.(*fakeState)
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.closed {
		return nil, fmt.Errorf("fake: step on a closed state")
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("fake: no tokens")
	}
	if offset == 0 {
		st.seq = nil
		m.fed = append(m.fed, nil)
	} else if offset != len(st.seq) {
		return nil, fmt.Errorf("fake: offset %d after %d tokens", offset, len(st.seq))
	}
	st.seq = append(st.seq, tokens...)
	m.fed[len(m.fed)-1] = slices.Clone(st.seq)

	// j: the last sot-sequence token up to the queried position; the sampled positions
	// start there.
	tok := m.tok
	p := len(st.seq) - 1
	j := -1
	for i, id := range st.seq {
		_, isLang := tok.LanguageOf(id)
		if id == tok.SOT() || isLang || id == tok.Transcribe() || id == tok.Translate() || id == tok.NoTimestamps() {
			j = i
		}
	}
	logits := make([]float32, tok.NVocab())
	if st.seq[p] == tok.SOT() {
		logits[tok.NoSpeech()] += st.w.noSpeech
		if st.w.language != 0 {
			logits[st.w.language] += margin
		}
		if tok.Multilingual() {
			return logits, nil // the language and task tokens follow
		}
	}
	if j < 0 {
		return logits, nil // inside the prompt
	}
	k := p - j
	if k == 0 {
		st.attempt++
	}
	if st.attempt > len(st.w.attempts) || st.attempt == 0 {
		return nil, fmt.Errorf("fake: attempt %d not scripted", st.attempt)
	}
	script := st.w.attempts[st.attempt-1]
	fav := tok.EOT()
	if k < len(script) {
		fav = script[k]
	}
	if fav != flat {
		logits[fav] += margin
	}
	return logits, nil
}

// byteTokenizer is a multilingual whisper tokenizer whose only mergeable tokens are the 256
// bytes: every text byte is one token, so multi-byte characters always span tokens. It needs
// no vocabulary file.
func byteTokenizer(t testing.TB) *whispertokenizer.Tokenizer {
	t.Helper()
	tok, err := byteTok()
	require.NoError(t, err)
	return tok
}

var byteTok = sync.OnceValues(func() (*whispertokenizer.Tokenizer, error) {
	var b bytes.Buffer
	for i := range 256 {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(i)}), i)
	}
	ranks, err := whispertokenizer.LoadRanks(&b)
	if err != nil {
		return nil, err
	}
	return whispertokenizer.New(ranks, whispertokenizer.Config{Multilingual: true, NumLanguages: 99})
})

// realTokenizer loads multilingual.tiktoken from ../shared/testdata/whisper next to the
// repository root, or skips.
func realTokenizer(t testing.TB) *whispertokenizer.Tokenizer {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
	d := filepath.Join(dir, "..", "shared", "testdata", "whisper")
	cfg := whispertokenizer.Config{Multilingual: true, NumLanguages: 99}
	if _, err := os.Stat(filepath.Join(d, cfg.RanksFile())); err != nil {
		t.Skipf("whisper vocabulary %s not found in %s (see shared/testdata/README.md): %v", cfg.RanksFile(), d, err)
	}
	tok, err := whispertokenizer.Load(d, cfg)
	require.NoError(t, err)
	return tok
}

// seq concatenates token ids and texts (encoded as ordinary text) into one token list.
func seq(tok *whispertokenizer.Tokenizer, parts ...any) []int {
	var out []int
	for _, p := range parts {
		switch v := p.(type) {
		case int:
			out = append(out, v)
		case []int:
			out = append(out, v...)
		case string:
			out = append(out, tok.Encode(v)...)
		default:
			panic(fmt.Sprintf("seq: %T", p))
		}
	}
	return out
}

// ts is the timestamp token of a time in seconds.
func ts(tok *whispertokenizer.Tokenizer, sec float64) int {
	return tok.TimestampBegin() + int(sec/0.02+0.5)
}

// silence is sec seconds of 16 kHz zeros.
func silence(sec float64) []float32 { return make([]float32, int(sec*16000)) }
