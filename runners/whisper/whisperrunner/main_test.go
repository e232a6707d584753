//go:build cgo

package whisperrunner

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tenstorrent/tt-media-server-go/internal/simtest"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/whispertokenizer"
)

func TestMain(m *testing.M) {
	simtest.Setup(2, "0.001")
	goleak.VerifyTestMain(m)
}

// whisperDir is ../shared/testdata/whisper beside the repository root; the test is skipped
// when it is absent.
func whisperDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "go.mod not found above the test directory")
		dir = parent
	}
	d := filepath.Join(dir, "..", "shared", "testdata", "whisper")
	if _, err := os.Stat(filepath.Join(d, "multilingual.tiktoken")); err != nil {
		t.Skipf("whisper vocabulary not found in %s (the shared test data lives beside the repository, see shared/testdata/README.md): %v", d, err)
	}
	return d
}

// largeV3 is the vocabulary of the simulator's decoder program (n_vocab 51866), loaded once.
func largeV3(t testing.TB) *whispertokenizer.Tokenizer {
	t.Helper()
	dir := whisperDir(t)
	tok, err := loadLargeV3(dir)
	require.NoError(t, err)
	return tok
}

var loadLargeV3 = func() func(dir string) (*whispertokenizer.Tokenizer, error) {
	var (
		once sync.Once
		tok  *whispertokenizer.Tokenizer
		err  error
	)
	return func(dir string) (*whispertokenizer.Tokenizer, error) {
		once.Do(func() { tok, err = LoadTokenizer(dir, 51866) })
		return tok, err
	}
}()

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
	return tok.TimestampBegin() + int(math.Round(sec/0.02))
}

// dec is one decode of a TTB_SIM_SCRIPT (see ttnn/README.md).
type dec struct {
	expect    []int // the sot sequence it expects; nil: not checked
	prompt    []int // the prompt it expects before <|startoftranscript|> (without <|startofprev|>)
	checkProm bool  // check prompt (an empty prompt then means none)
	emit      []int
	lp        map[int]float64 // per emitted token (by index) log probability
	nospeech  float64         // 0: the default (0.01)
	logprob   float64         // 0: the default (-0.05)
}

func ids(v []int) string {
	s := make([]string, len(v))
	for i, id := range v {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, " ")
}

// writeScript writes the decodes as a script and points TTB_SIM_SCRIPT at it; programs
// loaded afterwards in this test follow it.
func writeScript(t *testing.T, decs ...dec) {
	t.Helper()
	var b strings.Builder
	b.WriteString("ttb-sim-script 1\n")
	for _, d := range decs {
		b.WriteString("decode\n")
		if d.expect != nil {
			fmt.Fprintf(&b, "expect %s\n", ids(d.expect))
		}
		if d.checkProm {
			fmt.Fprintf(&b, "prompt %s\n", ids(d.prompt))
		}
		if len(d.emit) > 0 {
			parts := make([]string, len(d.emit))
			for i, id := range d.emit {
				parts[i] = strconv.Itoa(id)
				if lp, ok := d.lp[i]; ok {
					parts[i] += ":" + strconv.FormatFloat(lp, 'g', -1, 64)
				}
			}
			fmt.Fprintf(&b, "emit %s\n", strings.Join(parts, " "))
		}
		if d.nospeech != 0 {
			fmt.Fprintf(&b, "nospeech %g\n", d.nospeech)
		}
		if d.logprob != 0 {
			fmt.Fprintf(&b, "logprob %g\n", d.logprob)
		}
	}
	path := filepath.Join(t.TempDir(), "script.txt")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	t.Setenv("TTB_SIM_SCRIPT", path)
}

// audio is sec seconds of a quiet 16 kHz tone (the sim ignores what the audio says).
func audio(sec float64) []float32 {
	x := make([]float32, int(sec*16000))
	for i := range x {
		x[i] = float32(0.1 * math.Sin(float64(i)*0.07))
	}
	return x
}
