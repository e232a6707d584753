// Package lora reads LoRA adapters for SDXL: a local .safetensors file under the configured
// root (LORA_ROOT; no path traversal, symlinks resolved, no network), parsed for real (header,
// tensor names, shapes, dtypes, byte ranges) and checked against SDXL's UNet and text-encoder
// modules (kohya-ss names lora_unet_*/lora_te1_*/lora_te2_* with lora_down/lora_up/alpha, or
// diffusers/PEFT names unet.*/text_encoder.*/text_encoder_2.* with lora_A/lora_B) and their
// ranks. Adapters are cached by file identity. The fusion into the weights is the device's
// (runners/diffusion/pipeline); this package gives it the factors.
package lora

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Errors of this package; every one is the client's (HTTP 400).
var (
	// ErrDisabled: LORA_ROOT is not set.
	ErrDisabled = errors.New("LoRA is not enabled on this server: LORA_ROOT is not set")
	// ErrNotLocal: a URL or Hugging Face Hub id, or not a .safetensors file.
	ErrNotLocal = errors.New("only local .safetensors files under LORA_ROOT are supported (no Hugging Face Hub ids or URLs: the server has no network at run time)")
	// ErrOutside: the path leaves LORA_ROOT (.., an absolute path elsewhere, or a symlink).
	ErrOutside = errors.New("lora_path is outside LORA_ROOT")
	// ErrNotFound: no such file under LORA_ROOT.
	ErrNotFound = errors.New("lora_path: no such file under LORA_ROOT")
	// ErrInvalid: the file is not a valid safetensors file.
	ErrInvalid = errors.New("not a valid .safetensors file")
	// ErrMismatch: valid safetensors, but not a LoRA of SDXL's modules.
	ErrMismatch = errors.New("not a LoRA adapter of SDXL")
)

// Limits on a LoRA file.
const (
	// MaxFileBytes bounds the adapter file (SDXL LoRAs are tens to hundreds of MB).
	MaxFileBytes = 1 << 30
	// maxHeaderBytes is safetensors' own header limit.
	maxHeaderBytes = 100 << 20
)

var hubID = regexp.MustCompile(`^[A-Za-z0-9][\w.-]*/[\w.-]+$`)

// Resolve maps a request's lora_path to the real path of a regular file under root: relative
// paths are taken from root; the path, and the file after resolving symlinks, must stay inside
// root's real path. URLs, Hub ids and names not ending in .safetensors are ErrNotLocal.
func Resolve(root, p string) (string, error) {
	switch {
	case root == "":
		return "", ErrDisabled
	case p == "":
		return "", fmt.Errorf("%w: empty lora_path", ErrNotLocal)
	case strings.Contains(p, "://") || strings.HasPrefix(p, "hf:"):
		return "", fmt.Errorf("%w: %q", ErrNotLocal, p)
	case !strings.HasSuffix(strings.ToLower(p), ".safetensors"):
		if hubID.MatchString(p) {
			return "", fmt.Errorf("%w: %q looks like a Hub id", ErrNotLocal, p)
		}
		return "", fmt.Errorf("%w: %q is not a .safetensors file", ErrNotLocal, p)
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("%w: %q", ErrNotLocal, p)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("LORA_ROOT %q: %w", root, err)
	}
	cand := p
	if !filepath.IsAbs(cand) {
		cand = filepath.Join(absRoot, cand)
	}
	cand = filepath.Clean(cand)
	if !inside(absRoot, cand) {
		return "", fmt.Errorf("%w: %q", ErrOutside, p)
	}
	realRoot, err := filepath.EvalSymlinks(absRoot)
	if err != nil {
		return "", fmt.Errorf("LORA_ROOT %q: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(cand)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%w: %q", ErrNotFound, p)
		}
		return "", fmt.Errorf("%w: %q: %v", ErrNotFound, p, err)
	}
	if !inside(realRoot, real) {
		return "", fmt.Errorf("%w: %q resolves to a file outside it", ErrOutside, p)
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %q is not a regular file", ErrNotFound, p)
	}
	return real, nil
}

func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// Tensor is one tensor of a safetensors file.
type Tensor struct {
	DType string
	Shape []int
	data  []byte
}

// Layer is one adapted module: W += scale * (Alpha/Rank) * Up @ Down.
type Layer struct {
	Module Module
	Rank   int
	Alpha  float32
	Down   Tensor // [Rank, In]
	Up     Tensor // [Out, Rank]
}

// Adapter is a parsed LoRA file.
type Adapter struct {
	// Path is the file's real path.
	Path string
	// Layers are the adapted modules, sorted by component and name.
	Layers []Layer
	// Metadata is the file's __metadata__.
	Metadata map[string]string
	// Values is the number of factor values (what fusion streams to the device).
	Values int
}

// header is one entry of the safetensors JSON header.
type header struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

var dtypeSize = map[string]int{"F16": 2, "BF16": 2, "F32": 4, "F64": 8, "I8": 1, "U8": 1, "I16": 2, "U16": 2,
	"I32": 4, "U32": 4, "I64": 8, "U64": 8, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}

// ParseFile reads and parses a LoRA file (see Parse).
func ParseFile(path string) (*Adapter, error) {
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
	if fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, over the %d-byte limit", ErrInvalid, name, fi.Size(), MaxFileBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, name, err)
	}
	a, err := Parse(b, name)
	if err != nil {
		return nil, err
	}
	a.Path = path
	return a, nil
}

// Parse parses safetensors bytes as an SDXL LoRA; name is used in errors. Every tensor must
// be a factor or alpha of an SDXL module, with consistent shapes and a float dtype.
func Parse(b []byte, name string) (*Adapter, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, name, fmt.Sprintf(format, a...))
	}
	if len(b) < 8 {
		return nil, bad("%d bytes, shorter than the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n < 2 || n > maxHeaderBytes || n > uint64(len(b)-8) {
		return nil, bad("header length %d does not fit the %d-byte file", n, len(b))
	}
	hdr := b[8 : 8+n]
	data := b[8+n:]
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, bad("header is not a JSON object: %v", err)
	}
	a := &Adapter{Path: name}
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
		if begin < 0 || end < begin || end > int64(len(data)) || end-begin != count*int64(size) {
			return nil, bad("tensor %q: bytes [%d, %d) for %s%v in a %d-byte data section", tn, begin, end, h.DType, h.Shape, len(data))
		}
		tensors[tn] = Tensor{DType: h.DType, Shape: h.Shape, data: data[begin:end]}
		spans = append(spans, span{tn, begin, end})
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
	if at != int64(len(data)) {
		return nil, bad("%d bytes after the last tensor", int64(len(data))-at)
	}
	if err := a.layers(tensors, name); err != nil {
		return nil, err
	}
	return a, nil
}

// peftPrefix maps diffusers/PEFT component prefixes to components.
var peftPrefix = []struct {
	prefix string
	c      Component
}{{"text_encoder_2.", TextEncoder2}, {"text_encoder.", TextEncoder}, {"unet.", UNet}}

// role splits a tensor name into its module key and role (down, up, alpha).
func role(tn string) (Module, string, bool) {
	for _, s := range []struct{ suffix, role string }{
		{".lora_down.weight", "down"}, {".lora_up.weight", "up"}, {".alpha", "alpha"},
	} {
		if base, ok := strings.CutSuffix(tn, s.suffix); ok {
			m, found := kohyaModules[base]
			return m, s.role, found
		}
	}
	for _, s := range []struct{ suffix, role string }{{".lora_A.weight", "down"}, {".lora_B.weight", "up"}} {
		base, ok := strings.CutSuffix(tn, s.suffix)
		if !ok {
			continue
		}
		for _, p := range peftPrefix {
			if rest, ok := strings.CutPrefix(base, p.prefix); ok {
				m, found := sdxlModules[string(p.c)+"."+rest]
				return m, s.role, found
			}
		}
		return Module{}, "", false
	}
	return Module{}, "", false
}

func (a *Adapter) layers(tensors map[string]Tensor, name string) error {
	mismatch := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrMismatch, name, fmt.Sprintf(format, args...))
	}
	type parts struct {
		m                Module
		down, up, alpha  *Tensor
		downName, upName string
	}
	byKey := map[string]*parts{}
	for tn, t := range tensors {
		m, r, ok := role(tn)
		if !ok {
			return mismatch("tensor %q is not a LoRA factor of an SDXL UNet or text-encoder module (expected lora_unet_*/lora_te1_*/lora_te2_* .lora_down/.lora_up/.alpha, or unet.*/text_encoder.*/text_encoder_2.* .lora_A/.lora_B)", tn)
		}
		if t.DType != "F16" && t.DType != "BF16" && t.DType != "F32" {
			return mismatch("tensor %q is %s; LoRA factors must be F16, BF16 or F32", tn, t.DType)
		}
		key := string(m.Component) + "." + m.Name
		p := byKey[key]
		if p == nil {
			p = &parts{m: m}
			byKey[key] = p
		}
		switch r {
		case "down":
			if p.down != nil {
				return mismatch("module %s has two down factors (%q and %q)", key, p.downName, tn)
			}
			p.down, p.downName = &t, tn
		case "up":
			if p.up != nil {
				return mismatch("module %s has two up factors (%q and %q)", key, p.upName, tn)
			}
			p.up, p.upName = &t, tn
		default:
			p.alpha = &t
		}
	}
	for key, p := range byKey {
		if p.down == nil || p.up == nil {
			return mismatch("module %s lacks its %s factor", key, map[bool]string{true: "up", false: "down"}[p.down != nil])
		}
		d, u := p.down.Shape, p.up.Shape
		if len(d) != 2 || len(u) != 2 {
			return mismatch("module %s: factors %q %v and %q %v are not matrices (convolution LoRAs are not supported)", key, p.downName, d, p.upName, u)
		}
		rank := d[0]
		if rank < 1 || rank > min(p.m.In, p.m.Out) || d[1] != p.m.In || u[0] != p.m.Out || u[1] != rank {
			return mismatch("module %s is [%d out, %d in]: down %q is %v, up %q is %v (want [rank, %d] and [%d, rank], 1 <= rank <= %d)",
				key, p.m.Out, p.m.In, p.downName, d, p.upName, u, p.m.In, p.m.Out, min(p.m.In, p.m.Out))
		}
		l := Layer{Module: p.m, Rank: rank, Alpha: float32(rank), Down: *p.down, Up: *p.up}
		if p.alpha != nil {
			v := p.alpha.floats()
			if len(v) != 1 || !(v[0] > 0) || math.IsInf(float64(v[0]), 0) {
				return mismatch("module %s: alpha %v is not one positive number", key, v)
			}
			l.Alpha = v[0]
		}
		a.Layers = append(a.Layers, l)
		a.Values += rank * (p.m.In + p.m.Out)
	}
	slices.SortFunc(a.Layers, func(x, y Layer) int {
		return strings.Compare(string(x.Module.Component)+"."+x.Module.Name, string(y.Module.Component)+"."+y.Module.Name)
	})
	return nil
}

// floats converts the tensor to float32.
func (t Tensor) floats() []float32 {
	out := make([]float32, 0, len(t.data)/2)
	switch t.DType {
	case "F32":
		for i := 0; i+4 <= len(t.data); i += 4 {
			out = append(out, math.Float32frombits(binary.LittleEndian.Uint32(t.data[i:])))
		}
	case "BF16":
		for i := 0; i+2 <= len(t.data); i += 2 {
			out = append(out, math.Float32frombits(uint32(binary.LittleEndian.Uint16(t.data[i:]))<<16))
		}
	case "F16":
		for i := 0; i+2 <= len(t.data); i += 2 {
			out = append(out, half(binary.LittleEndian.Uint16(t.data[i:])))
		}
	}
	return out
}

// half converts IEEE-754 binary16 to float32.
func half(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		return float32(math.Copysign(float64(frac)*math.Pow(2, -24), float64(int32(sign)>>31|1)))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// Factors yields, layer by layer, the down factor and then the up factor times Alpha/Rank (so
// that the device folds scale * up·down into each weight) as float32. Non-finite values are an
// error (a corrupt file).
func (a *Adapter) Factors() iter.Seq2[[]float32, error] {
	return func(yield func([]float32, error) bool) {
		for _, l := range a.Layers {
			down, up := l.Down.floats(), l.Up.floats()
			k := l.Alpha / float32(l.Rank)
			for i := range up {
				up[i] *= k
			}
			for _, v := range [][]float32{down, up} {
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

// Cache keeps the most recently used adapters, keyed by real path, size and modification time
// (a replaced file is read again).
type Cache struct {
	mu      sync.Mutex
	max     int
	entries []cacheEntry // most recent last
	// checkOnly keeps adapters without their tensor data (NewCheckCache).
	checkOnly bool
}

type cacheEntry struct {
	path  string
	size  int64
	mtime time.Time
	a     *Adapter
}

// NewCache keeps up to n adapters (at least 1).
func NewCache(n int) *Cache { return &Cache{max: max(n, 1)} }

// NewCheckCache keeps the results of up to n checks (at least 1): the adapters it returns have
// their layers' names, ranks and alphas but no tensor data (Factors yields nothing), so an
// HTTP front end can refuse bad files without holding adapters in memory.
func NewCheckCache(n int) *Cache { return &Cache{max: max(n, 1), checkOnly: true} }

// Load resolves p under root and returns its parsed adapter, from the cache when the file is
// unchanged.
func (c *Cache) Load(root, p string) (*Adapter, error) {
	real, err := Resolve(root, p)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrNotFound, p, err)
	}
	c.mu.Lock()
	for i, e := range c.entries {
		if e.path == real && e.size == fi.Size() && e.mtime.Equal(fi.ModTime()) {
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e)
			c.mu.Unlock()
			return e.a, nil
		}
	}
	c.mu.Unlock()
	a, err := ParseFile(real)
	if err != nil {
		return nil, err
	}
	if c.checkOnly {
		if err := a.checkFinite(); err != nil {
			return nil, err
		}
		a = a.withoutData()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = slices.DeleteFunc(c.entries, func(e cacheEntry) bool { return e.path == real })
	c.entries = append(c.entries, cacheEntry{real, fi.Size(), fi.ModTime(), a})
	if len(c.entries) > c.max {
		c.entries = c.entries[len(c.entries)-c.max:]
	}
	return a, nil
}

// checkFinite refuses factors with NaN or infinite values (a corrupt file).
func (a *Adapter) checkFinite() error {
	for _, err := range a.Factors() {
		if err != nil {
			return err
		}
	}
	return nil
}

// withoutData is a copy of a whose layers hold no tensor data.
func (a *Adapter) withoutData() *Adapter {
	c := *a
	c.Layers = make([]Layer, len(a.Layers))
	for i, l := range a.Layers {
		l.Down.data, l.Up.data = nil, nil
		c.Layers[i] = l
	}
	return &c
}
