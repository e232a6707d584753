// Package voices is SpeechT5's speaker table: 512-float x-vectors by speaker id, read from
// MODEL_WEIGHTS_PATH in a pickle-free format, or the built-in table of mock-device mode; the
// default speaker (speaker_7306, as HEAD); and the table mapping OpenAI's voice names to
// speakers.
//
// File format (docs/API.md, "Voices"): <MODEL_WEIGHTS_PATH>/speaker_embeddings.npy, a NumPy
// .npy array of little-endian float32 ('<f4'), C order, shape (N, 512): row i is the x-vector
// of speaker_%04d (HEAD's ids for the rows of Matthijs/cmu-arctic-xvectors' validation split,
// so speaker_7306 is row 7306). An optional speaker_ids.txt beside it names the rows instead,
// one id per line.
package voices

import (
	"bufio"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sbinet/npyio/npy"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// Files in MODEL_WEIGHTS_PATH.
const (
	EmbeddingsFile = "speaker_embeddings.npy"
	IDsFile        = "speaker_ids.txt"
)

// Default is HEAD's default speaker (cmu_us_slt_arctic).
const Default = "speaker_7306"

// maxSpeakers bounds the table a file may declare.
const maxSpeakers = 100_000

// ErrUnknownSpeaker is a speaker id the table does not have.
var ErrUnknownSpeaker = errors.New("unknown speaker")

// OpenAI maps OpenAI's voice names to speakers of the CMU ARCTIC x-vector table. The rows are
// spread over the table's seven CMU ARCTIC voices; alloy is HEAD's default speaker.
var OpenAI = map[string]string{
	"alloy":   Default,
	"ash":     "speaker_0100",
	"ballad":  "speaker_1200",
	"coral":   "speaker_2300",
	"echo":    "speaker_3400",
	"fable":   "speaker_4500",
	"nova":    "speaker_5600",
	"onyx":    "speaker_6700",
	"sage":    "speaker_7000",
	"shimmer": "speaker_7500",
	"verse":   "speaker_7800",
	"marin":   "speaker_0500",
	"cedar":   "speaker_6000",
}

// Table is a speaker table.
type Table struct {
	ids  []string
	vecs map[string][]float32
	// Source says where it came from (the file, or "built-in").
	Source string
}

// Load reads the table of dir; a directory without speaker_embeddings.npy is an error naming it.
func Load(dir string) (*Table, error) {
	path := filepath.Join(dir, EmbeddingsFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("speaker table: %w", err)
	}
	defer f.Close()
	data, rows, err := readNPY(f)
	if err != nil {
		return nil, fmt.Errorf("speaker table %s: %w", path, err)
	}
	ids := make([]string, rows)
	for i := range ids {
		ids[i] = fmt.Sprintf("speaker_%04d", i)
	}
	if names, err := readIDs(filepath.Join(dir, IDsFile)); err == nil {
		if len(names) != rows {
			return nil, fmt.Errorf("speaker table: %s names %d speakers, %s has %d rows", IDsFile, len(names), EmbeddingsFile, rows)
		}
		ids = names
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("speaker table: %w", err)
	}
	t := &Table{vecs: make(map[string][]float32, rows), Source: path}
	for i, id := range ids {
		if _, dup := t.vecs[id]; dup {
			return nil, fmt.Errorf("speaker table: speaker %q twice", id)
		}
		t.ids = append(t.ids, id)
		t.vecs[id] = data[i*runners.SpeechEmbeddingDim : (i+1)*runners.SpeechEmbeddingDim : (i+1)*runners.SpeechEmbeddingDim]
	}
	return t, nil
}

func readNPY(f *os.File) (data []float32, rows int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed .npy: %v", r)
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	r, err := npy.NewReader(f)
	if err != nil {
		return nil, 0, err
	}
	d := r.Header.Descr
	if d.Type != "<f4" || d.Fortran || len(d.Shape) != 2 || d.Shape[1] != runners.SpeechEmbeddingDim {
		return nil, 0, fmt.Errorf("want a C-order '<f4' array of shape (N, %d), got %s %v fortran=%v",
			runners.SpeechEmbeddingDim, d.Type, d.Shape, d.Fortran)
	}
	rows = d.Shape[0]
	if rows < 1 || rows > maxSpeakers || int64(rows)*runners.SpeechEmbeddingDim*4 > st.Size() {
		return nil, 0, fmt.Errorf("%d rows (file of %d bytes, at most %d speakers)", rows, st.Size(), maxSpeakers)
	}
	data = make([]float32, rows*runners.SpeechEmbeddingDim)
	if err := r.Read(&data); err != nil {
		return nil, 0, err
	}
	for _, v := range data {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, 0, errors.New("a value is NaN or infinite")
		}
	}
	return data, rows, nil
}

func readIDs(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if id := strings.TrimSpace(sc.Text()); id != "" {
			ids = append(ids, id)
		}
	}
	return ids, sc.Err()
}

// ForWeights is the table of a weights directory: its speaker_embeddings.npy, or the built-in
// table when dir is "" or has none.
func ForWeights(dir string) (*Table, error) {
	if dir == "" {
		return Builtin(), nil
	}
	if _, err := os.Stat(filepath.Join(dir, EmbeddingsFile)); err != nil {
		return Builtin(), nil
	}
	return Load(dir)
}

// Builtin is mock-device mode's table: speaker_7306 and every speaker OpenAI names, each a
// fixed pseudo-random x-vector (seeded by its id) scaled like CMU ARCTIC's (norm about 1.6).
func Builtin() *Table {
	set := map[string]bool{Default: true}
	for _, s := range OpenAI {
		set[s] = true
	}
	t := &Table{vecs: map[string][]float32{}, Source: "built-in"}
	for id := range set {
		t.ids = append(t.ids, id)
		h := fnv.New64a()
		_, _ = h.Write([]byte(id))
		rng := rand.New(rand.NewPCG(h.Sum64(), 0x5eec))
		v := make([]float32, runners.SpeechEmbeddingDim)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * 0.07)
		}
		t.vecs[id] = v
	}
	sort.Strings(t.ids)
	return t
}

// IDs lists the speakers in table order.
func (t *Table) IDs() []string { return append([]string(nil), t.ids...) }

// Len is the number of speakers.
func (t *Table) Len() int { return len(t.ids) }

// Has reports whether the table has speaker id.
func (t *Table) Has(id string) bool { _, ok := t.vecs[id]; return ok }

// Embedding is the x-vector of id (shared: do not change it).
func (t *Table) Embedding(id string) ([]float32, error) {
	v, ok := t.vecs[id]
	if !ok {
		return nil, fmt.Errorf("%w %q (%d speakers, e.g. %s)", ErrUnknownSpeaker, id, len(t.ids), Default)
	}
	return v, nil
}

// DefaultID is the speaker a request without one gets: speaker_7306 when the table has it,
// else its first speaker (as HEAD's runner).
func (t *Table) DefaultID() string {
	if t.Has(Default) || len(t.ids) == 0 {
		return Default
	}
	return t.ids[0]
}

// Voice resolves an OpenAI voice name (or a speaker id of the table) to a speaker id.
func (t *Table) Voice(name string) (string, error) {
	if id, ok := OpenAI[strings.ToLower(name)]; ok && t.Has(id) {
		return id, nil
	}
	if t.Has(name) {
		return name, nil
	}
	return "", fmt.Errorf("%w %q", ErrUnknownSpeaker, name)
}
