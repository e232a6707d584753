package lora

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Tensor is one tensor of a safetensors file: its dtype, shape and byte range in the file (its
// values stay there until Factors reads them).
type Tensor struct {
	DType  string
	Shape  []int
	off, n int64
}

// Layer is one adapted module: W += scale * (Alpha/Rank) * Up @ Down.
type Layer struct {
	Module Module
	Rank   int
	Alpha  float32
	Down   Tensor // [Rank, In]
	Up     Tensor // [Out, Rank]
}

// Adapter is a parsed LoRA file: its layers and where their factors lie in the file.
type Adapter struct {
	// Path is the file's real path.
	Path string
	// Layers are the adapted modules, sorted by component and name.
	Layers []Layer
	// Metadata is the file's __metadata__.
	Metadata map[string]string
	// Values is the number of factor values (what fusion streams to the device).
	Values int

	// open opens the tensor data: the file (refused if it changed since the parse) or the
	// bytes Parse was given.
	open func() (io.ReaderAt, func() error, error)
	// headerBytes is the header's length and maxTensor the largest factor's bytes: what the
	// adapter costs in memory, kept and while its factors stream.
	headerBytes, maxTensor int64
}

// header is one entry of the safetensors JSON header.
type header struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

var dtypeSize = map[string]int{"F16": 2, "BF16": 2, "F32": 4, "F64": 8, "I8": 1, "U8": 1, "I16": 2, "U16": 2,
	"I32": 4, "U32": 4, "I64": 8, "U64": 8, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}

// parseLimits are one parse's file-size limit and its memory reservation.
type parseLimits struct {
	maxFile int64
	// reserve, when set, reserves the header's parse memory (headerCost), called once the
	// header length is known to be valid and before the header is read; the release runs when
	// the parse ends.
	reserve func(n int64) (release func(), err error)
}

// headerCost is the memory parsing an n-byte header takes at most: the bytes, the JSON tree
// of raw messages and the tensors and layers built from it.
func headerCost(n int64) int64 { return 4*n + 64<<10 }

// scanCost is the memory streaming a's factors takes: one tensor's bytes and the float32
// down and up factors alive while yielded.
func (a *Adapter) scanCost() int64 { return 5 * a.maxTensor }

// ParseFile reads and parses a LoRA file of at most DefaultMaxFileBytes (see Parse).
func ParseFile(path string) (*Adapter, error) {
	return parseFile(path, parseLimits{maxFile: DefaultMaxFileBytes})
}

func parseFile(path string, lim parseLimits) (*Adapter, error) {
	name := filepath.Base(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotFound, name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotFound, name, err)
	}
	if fi.Size() > lim.maxFile {
		return nil, fmt.Errorf("%w: %s is %d bytes, over LORA_MAX_FILE_BYTES (%d)", ErrTooLarge, name, fi.Size(), lim.maxFile)
	}
	a, err := parse(f, fi.Size(), name, lim)
	if err != nil {
		return nil, err
	}
	a.Path = path
	size, mtime := fi.Size(), fi.ModTime()
	a.open = func() (io.ReaderAt, func() error, error) { return openUnchanged(path, size, mtime) }
	return a, nil
}

// openUnchanged opens path for reading its factors, refusing a file whose size or modification
// time differ from those it had when its header was checked.
func openUnchanged(path string, size int64, mtime time.Time) (io.ReaderAt, func() error, error) {
	name := filepath.Base(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrNotFound, name, err)
	}
	fi, err := f.Stat()
	if err == nil && (fi.Size() != size || !fi.ModTime().Equal(mtime)) {
		err = fmt.Errorf("%w: %s changed since it was checked; send the request again", ErrInvalid, name)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, f.Close, nil
}

// Parse parses safetensors bytes as an SDXL LoRA; name is used in errors. Every tensor must
// be a factor or alpha of an SDXL module, with consistent shapes and a float dtype.
func Parse(b []byte, name string) (*Adapter, error) {
	a, err := parse(bytes.NewReader(b), int64(len(b)), name, parseLimits{maxFile: math.MaxInt64})
	if err != nil {
		return nil, err
	}
	a.open = func() (io.ReaderAt, func() error, error) { return bytes.NewReader(b), func() error { return nil }, nil }
	return a, nil
}

// readFull reads len(p) bytes at off (io.EOF with every byte read is success).
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// parse reads the 8-byte header length and then the header, and validates every tensor's
// name, dtype, shape and byte range against the file's size and SDXL's modules before any
// tensor data is read (only the alphas, one number each, are read here).
func parse(r io.ReaderAt, size int64, name string, lim parseLimits) (*Adapter, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, name, fmt.Sprintf(format, a...))
	}
	if size < 8 {
		return nil, bad("%d bytes, shorter than the 8-byte header length", size)
	}
	var lb [8]byte
	if err := readFull(r, lb[:], 0); err != nil {
		return nil, bad("reading the header length: %v", err)
	}
	n := binary.LittleEndian.Uint64(lb[:])
	if n < 2 || n > uint64(size-8) {
		return nil, bad("header length %d does not fit the %d-byte file", n, size)
	}
	if n > maxHeaderBytes {
		return nil, bad("header length %d is over the %d-byte limit", n, maxHeaderBytes)
	}
	if lim.reserve != nil {
		release, err := lim.reserve(headerCost(int64(n)))
		if err != nil {
			return nil, err
		}
		defer release()
	}
	hdr := make([]byte, n)
	if err := readFull(r, hdr, 8); err != nil {
		return nil, bad("reading the %d-byte header: %v", n, err)
	}
	dataStart := 8 + int64(n)
	dataLen := size - dataStart
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, bad("header is not a JSON object: %v", err)
	}
	a := &Adapter{Path: name, headerBytes: int64(n)}
	if m, ok := raw["__metadata__"]; ok {
		if err := json.Unmarshal(m, &a.Metadata); err != nil {
			return nil, bad("__metadata__ is not a string map: %v", err)
		}
		delete(raw, "__metadata__")
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: %s has no tensors", ErrMismatch, name)
	}
	type span struct {
		name       string
		begin, end int64
	}
	tensors := map[string]Tensor{}
	var spans []span
	for tn, msg := range raw {
		var h header
		dec := json.NewDecoder(strings.NewReader(string(msg)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&h); err != nil {
			return nil, bad("tensor %q: %v", tn, err)
		}
		size, ok := dtypeSize[h.DType]
		if !ok {
			return nil, bad("tensor %q: unknown dtype %q", tn, h.DType)
		}
		count := int64(1)
		for _, d := range h.Shape {
			if d < 0 || (d > 0 && count > math.MaxInt32/int64(d)) {
				return nil, bad("tensor %q: shape %v", tn, h.Shape)
			}
			count *= int64(d)
		}
		begin, end := h.Offsets[0], h.Offsets[1]
		if begin < 0 || end < begin || end > dataLen || end-begin != count*int64(size) {
			return nil, bad("tensor %q: bytes [%d, %d) for %s%v in a %d-byte data section", tn, begin, end, h.DType, h.Shape, dataLen)
		}
		tensors[tn] = Tensor{DType: h.DType, Shape: h.Shape, off: dataStart + begin, n: end - begin}
		spans = append(spans, span{tn, begin, end})
		a.maxTensor = max(a.maxTensor, end-begin)
	}
	// safetensors: the tensors tile the data section, without holes or overlaps.
	slices.SortFunc(spans, func(x, y span) int {
		if x.begin != y.begin {
			return int(x.begin - y.begin)
		}
		return int(x.end - y.end)
	})
	at := int64(0)
	for _, s := range spans {
		if s.begin != at {
			return nil, bad("tensor %q starts at byte %d, expected %d (a hole or an overlap)", s.name, s.begin, at)
		}
		at = s.end
	}
	if at != dataLen {
		return nil, bad("%d bytes after the last tensor", dataLen-at)
	}
	if err := a.layers(r, tensors, name); err != nil {
		return nil, err
	}
	return a, nil
}

// read reads t's values as float32, reusing *buf for its bytes.
func (t Tensor) read(r io.ReaderAt, buf *[]byte) ([]float32, error) {
	if int64(cap(*buf)) < t.n {
		*buf = make([]byte, t.n)
	}
	b := (*buf)[:t.n]
	if err := readFull(r, b, t.off); err != nil {
		return nil, err
	}
	return floats(t.DType, b), nil
}

// Factors yields, layer by layer, the down factor and then the up factor times Alpha/Rank (so
// that the device folds scale * up·down into each weight) as float32, reading each from the
// file as it goes (one tensor in memory at a time). Non-finite values, or a file changed since
// it was parsed, are an error.
func (a *Adapter) Factors() iter.Seq2[[]float32, error] {
	return func(yield func([]float32, error) bool) {
		r, closeFn, err := a.open()
		if err != nil {
			yield(nil, err)
			return
		}
		defer closeFn() //nolint:errcheck // read-only
		var buf []byte
		for _, l := range a.Layers {
			k := l.Alpha / float32(l.Rank)
			for i, t := range []Tensor{l.Down, l.Up} {
				v, err := t.read(r, &buf)
				if err != nil {
					yield(nil, fmt.Errorf("%w: %s: module %s.%s: %v", ErrInvalid, filepath.Base(a.Path), l.Module.Component, l.Module.Name, err))
					return
				}
				if i == 1 {
					for j := range v {
						v[j] *= k
					}
				}
				for _, x := range v {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						yield(nil, fmt.Errorf("%w: %s: module %s.%s has non-finite values", ErrInvalid, filepath.Base(a.Path), l.Module.Component, l.Module.Name))
						return
					}
				}
				if !yield(v, nil) {
					return
				}
			}
		}
	}
}

// checkFinite reads every factor once and refuses NaN or infinite values (a corrupt file).
func (a *Adapter) checkFinite() error {
	for _, err := range a.Factors() {
		if err != nil {
			return err
		}
	}
	return nil
}
