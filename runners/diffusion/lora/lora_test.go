package lora

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type tensorSpec struct {
	name  string
	dtype string
	shape []int
	vals  []float32
}

// build writes safetensors bytes (F32/F16 values; header padded to 8 bytes).
func build(t *testing.T, ts []tensorSpec) []byte {
	t.Helper()
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, s := range ts {
		var raw []byte
		for _, v := range s.vals {
			switch s.dtype {
			case "F16":
				raw = binary.LittleEndian.AppendUint16(raw, toHalf(v))
			default:
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
			}
		}
		hdr[s.name] = map[string]any{"dtype": s.dtype, "shape": s.shape, "data_offsets": []int{len(data), len(data) + len(raw)}}
		data = append(data, raw...)
	}
	h, err := json.Marshal(hdr)
	require.NoError(t, err)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

// toHalf converts exactly representable values (the tests' small dyadic numbers).
func toHalf(v float32) uint16 {
	if v == 0 {
		return 0
	}
	b := math.Float32bits(v)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	return sign | uint16(exp)<<10 | uint16((b>>13)&0x3ff)
}

func fill(n int, v float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = v * float32(i%3+1)
	}
	return out
}

const q = "lora_unet_down_blocks_1_attentions_0_transformer_blocks_0_attn1_to_q"

func good() []tensorSpec {
	return []tensorSpec{
		{q + ".lora_down.weight", "F16", []int{2, 640}, fill(1280, 0.25)},
		{q + ".lora_up.weight", "F16", []int{640, 2}, fill(1280, 0.5)},
		{q + ".alpha", "F32", []int{}, []float32{1}},
		{"text_encoder_2.text_model.encoder.layers.31.mlp.fc2.lora_A.weight", "F32", []int{1, 5120}, fill(5120, 0.125)},
		{"text_encoder_2.text_model.encoder.layers.31.mlp.fc2.lora_B.weight", "F32", []int{1280, 1}, fill(1280, 1)},
	}
}

func TestParse(t *testing.T) {
	a, err := Parse(build(t, good()), "good.safetensors")
	require.NoError(t, err)
	require.Len(t, a.Layers, 2)
	require.Equal(t, TextEncoder2, a.Layers[0].Module.Component)
	require.Equal(t, UNet, a.Layers[1].Module.Component)
	require.Equal(t, 2, a.Layers[1].Rank)
	require.Equal(t, float32(1), a.Layers[1].Alpha)
	require.Equal(t, float32(1), a.Layers[0].Alpha, "no alpha: alpha = rank")
	require.Equal(t, 2*(640+640)+1*(5120+1280), a.Values)
	require.Equal(t, "pt", a.Metadata["format"])
	var got [][]float32
	for v, err := range a.Factors() {
		require.NoError(t, err)
		got = append(got, v)
	}
	require.Len(t, got, 4)
	require.Equal(t, float32(0.25), got[2][0])
	require.Equal(t, float32(0.5*1.0/2), got[3][0], "up times alpha/rank")
	require.Positive(t, Modules())
}

func TestParseRefuses(t *testing.T) {
	valid := build(t, good())
	mod := func(f func([]tensorSpec) []tensorSpec) []byte { return build(t, f(good())) }
	hdrLen := binary.LittleEndian.Uint64(valid)
	for _, c := range []struct {
		name string
		b    []byte
		err  error
		msg  string
	}{
		{"empty", nil, ErrInvalid, "shorter"},
		{"truncated", valid[:len(valid)-10], ErrInvalid, "data section"},
		{"huge header length", append(binary.LittleEndian.AppendUint64(nil, 1<<40), valid[8:]...), ErrInvalid, "header length"},
		{"not json", append(binary.LittleEndian.AppendUint64(nil, 4), []byte("nope")...), ErrInvalid, "JSON"},
		{"trailing bytes", append(append([]byte(nil), valid...), 1, 2, 3, 4), ErrInvalid, "after the last tensor"},
		{"text file", []byte("this is not a safetensors file at all"), ErrInvalid, "header length"},
		{"unknown module", mod(func(ts []tensorSpec) []tensorSpec {
			ts[0].name = "lora_unet_conv_in.lora_down.weight"
			return ts
		}), ErrMismatch, "lora_unet_conv_in"},
		{"wrong in features", mod(func(ts []tensorSpec) []tensorSpec {
			ts[0].shape, ts[0].vals = []int{2, 320}, fill(640, 1)
			return ts
		}), ErrMismatch, "down"},
		{"rank mismatch", mod(func(ts []tensorSpec) []tensorSpec {
			ts[1].shape, ts[1].vals = []int{640, 4}, fill(2560, 1)
			return ts
		}), ErrMismatch, "rank"},
		{"missing up", mod(func(ts []tensorSpec) []tensorSpec { return append(ts[:1], ts[2:]...) }), ErrMismatch, "lacks its up"},
		{"conv factors", mod(func(ts []tensorSpec) []tensorSpec {
			ts[0].shape = []int{2, 640, 1, 1}
			return ts
		}), ErrMismatch, "convolution"},
		{"int dtype", mod(func(ts []tensorSpec) []tensorSpec {
			ts[2].dtype = "I32"
			return ts
		}), ErrMismatch, "I32"},
		{"zero alpha", mod(func(ts []tensorSpec) []tensorSpec {
			ts[2].vals = []float32{0}
			return ts
		}), ErrMismatch, "alpha"},
		{"no tensors", build(t, nil), ErrMismatch, "no tensors"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.b, "x.safetensors")
			require.ErrorIs(t, err, c.err)
			require.ErrorContains(t, err, "x.safetensors")
			require.ErrorContains(t, err, c.msg)
		})
	}
	// A hole between tensors: shift the second tensor's offsets by rewriting the header.
	var hdr map[string]any
	require.NoError(t, json.Unmarshal(valid[8:8+hdrLen], &hdr))
	e := hdr[q+".lora_up.weight"].(map[string]any)
	offs := e["data_offsets"].([]any)
	e["data_offsets"] = []any{offs[0].(float64) + 2, offs[1].(float64) + 2}
	h, err := json.Marshal(hdr)
	require.NoError(t, err)
	b := append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...)
	_, err = Parse(append(b, valid[8+hdrLen:]...), "x.safetensors")
	require.ErrorIs(t, err, ErrInvalid)
}

func TestFactorsNonFinite(t *testing.T) {
	ts := good()
	ts[1].vals[3] = float32(math.Inf(1))
	ts[1].dtype = "F32"
	a, err := Parse(build(t, ts), "inf.safetensors")
	require.NoError(t, err)
	var last error
	for _, err := range a.Factors() {
		last = err
	}
	require.ErrorIs(t, last, ErrInvalid)
}

func TestResolve(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "loras")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "sub", "a.safetensors"), []byte("x"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(base, "x.safetensors"), []byte("x"), 0o600))
	require.NoError(t, os.Symlink(filepath.Join(base, "x.safetensors"), filepath.Join(root, "evil.safetensors")))
	require.NoError(t, os.Symlink(filepath.Join(root, "sub", "a.safetensors"), filepath.Join(root, "ok.safetensors")))
	require.NoError(t, os.Mkdir(filepath.Join(root, "dir.safetensors"), 0o755))
	want, err := filepath.EvalSymlinks(filepath.Join(root, "sub", "a.safetensors"))
	require.NoError(t, err)
	for _, c := range []struct {
		name, root, path string
		err              error
	}{
		{"relative", root, "sub/a.safetensors", nil},
		{"absolute inside", root, filepath.Join(root, "sub", "a.safetensors"), nil},
		{"symlink inside", root, "ok.safetensors", nil},
		{"dot dot inside", root, "sub/../sub/a.safetensors", nil},
		{"traversal", root, "../x.safetensors", ErrOutside},
		{"deep traversal", root, "sub/../../x.safetensors", ErrOutside},
		{"absolute outside", root, filepath.Join(base, "x.safetensors"), ErrOutside},
		{"symlink outside", root, "evil.safetensors", ErrOutside},
		{"missing", root, "nope.safetensors", ErrNotFound},
		{"directory", root, "dir.safetensors", ErrNotFound},
		{"hub id", root, "latent-consistency/lcm-lora-sdxl", ErrNotLocal},
		{"url", root, "https://huggingface.co/x/y/resolve/main/a.safetensors", ErrNotLocal},
		{"not safetensors", root, "sub/a.ckpt", ErrNotLocal},
		{"empty", root, "", ErrNotLocal},
		{"no root", "", "sub/a.safetensors", ErrDisabled},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Resolve(c.root, c.path)
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

func TestCache(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	p := filepath.Join(root, "a.safetensors")
	require.NoError(t, os.WriteFile(p, build(t, good()), 0o600))
	c := NewCache(Options{Entries: 1})
	a1, err := c.Load(ctx, root, "a.safetensors")
	require.NoError(t, err)
	a2, err := c.Load(ctx, root, "a.safetensors")
	require.NoError(t, err)
	require.Same(t, a1, a2)
	require.EqualValues(t, 1, c.reads.Load())
	require.NoError(t, os.WriteFile(p, []byte("corrupt"), 0o600))
	_, err = c.Load(ctx, root, "a.safetensors")
	require.True(t, errors.Is(err, ErrInvalid), "a changed file is read again: %v", err)
	// The old adapter's factors are not read from the new file.
	for _, err := range a1.Factors() {
		require.ErrorContains(t, err, "changed since it was checked")
	}

	// A check cache streams the factors once and refuses non-finite ones.
	require.NoError(t, os.WriteFile(p, build(t, good()), 0o600))
	chk := NewCache(Options{Check: true})
	a, err := chk.Load(ctx, root, "a.safetensors")
	require.NoError(t, err)
	require.Len(t, a.Layers, 2)
	ts := good()
	ts[1].dtype, ts[1].vals[0] = "F32", float32(math.NaN())
	require.NoError(t, os.WriteFile(filepath.Join(root, "nan.safetensors"), build(t, ts), 0o600))
	_, err = chk.Load(ctx, root, "nan.safetensors")
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewCache(Options{}).Load(ctx, root, "nan.safetensors")
	require.NoError(t, err, "a cache without Check leaves the values to Factors")
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r    io.ReaderAt
	read atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read.Add(int64(n))
	return n, err
}

// sparse is a file of size bytes: head, then zeros.
type sparse struct {
	head []byte
	size int64
}

func (s sparse) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), s.size-off))
	clear(p[:n])
	if off < int64(len(s.head)) {
		copy(p[:n], s.head[off:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestBadHeadersReadNoData: a file whose header is bad is refused after reading at most its
// 8-byte length and its header, whatever its size; no memory is reserved for a length that
// does not fit.
func TestBadHeadersReadNoData(t *testing.T) {
	valid := build(t, good())
	hdrLen := int64(binary.LittleEndian.Uint64(valid))
	withHeader := func(h string, dataLen int64) sparse {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
		return sparse{append(b, h...), 8 + int64(len(h)) + dataLen}
	}
	lengthOnly := func(n uint64, size int64) sparse { return sparse{binary.LittleEndian.AppendUint64(nil, n), size} }
	const big = 1 << 30
	for _, c := range []struct {
		name    string
		b       sparse
		msg     string
		maxRead int64
	}{
		{"length too large for the file", lengthOnly(big, 1000), "does not fit", 8},
		{"length over the header limit", lengthOnly(maxHeaderBytes+1, big), "over the", 8},
		{"zeros", sparse{size: big}, "header length 0", 8},
		{"truncated length", sparse{[]byte{1, 2, 3}, 3}, "shorter than the 8-byte", 0},
		{"truncated header", sparse{valid[:8+hdrLen-5], 8 + hdrLen - 5}, "does not fit", 8},
		{"bad JSON", withHeader(`{"a": [1, 2`, big), "not a JSON object", 8 + 11},
		{"not an object", withHeader(`[1, 2, 3]`, big), "not a JSON object", 8 + 9},
		{"offsets outside the file", withHeader(`{"`+q+`.lora_down.weight": {"dtype": "F16", "shape": [2, 640], "data_offsets": [0, 2560000]}}`, 2560), "data section", -1},
		{"offsets not the shape's", withHeader(`{"`+q+`.lora_down.weight": {"dtype": "F16", "shape": [2, 640], "data_offsets": [0, 2]}}`, big), "data section", -1},
		{"negative offset", withHeader(`{"`+q+`.lora_down.weight": {"dtype": "F16", "shape": [1], "data_offsets": [-2, 0]}}`, big), "data section", -1},
		{"huge shape", withHeader(`{"`+q+`.lora_down.weight": {"dtype": "F16", "shape": [65536, 65536], "data_offsets": [0, 2]}}`, big), "shape", -1},
		{"unknown field", withHeader(`{"x": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2], "extra": 1}}`, big), "unknown field", -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &countingReader{r: c.b}
			var reserved []int64
			_, err := parse(r, c.b.size, "x.safetensors", parseLimits{maxFile: math.MaxInt64,
				reserve: func(n int64) (func(), error) { reserved = append(reserved, n); return func() {}, nil }})
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, "x.safetensors")
			require.ErrorContains(t, err, c.msg)
			limit := c.maxRead
			if limit < 0 { // a header that was read whole
				limit = 8 + int64(binary.LittleEndian.Uint64(c.b.head))
			}
			require.LessOrEqual(t, r.read.Load(), limit, "bytes read")
			if limit <= 8 {
				require.Empty(t, reserved, "nothing reserved before the length is valid")
			} else {
				require.Equal(t, []int64{headerCost(limit - 8)}, reserved)
			}
		})
	}
}

// TestMaxFileBytes: a file over the limit is refused from its size, unread.
func TestMaxFileBytes(t *testing.T) {
	root := t.TempDir()
	b := build(t, good())
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.safetensors"), b, 0o600))
	_, err := NewCache(Options{MaxFileBytes: int64(len(b) - 1)}).Load(context.Background(), root, "a.safetensors")
	require.ErrorIs(t, err, ErrTooLarge)
	require.ErrorContains(t, err, "LORA_MAX_FILE_BYTES")
	_, err = NewCache(Options{MaxFileBytes: int64(len(b))}).Load(context.Background(), root, "a.safetensors")
	require.NoError(t, err)
}

// TestConcurrentLoadsShareOneRead: callers asking for one file while it is being read wait for
// that read; the file is read once.
func TestConcurrentLoadsShareOneRead(t *testing.T) {
	for _, name := range []string{"good.safetensors", "zeros.safetensors"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(root, "good.safetensors"), build(t, good()), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(root, "zeros.safetensors"), make([]byte, 4096), 0o600))
			c := NewCache(Options{Check: true})
			started, proceed := make(chan struct{}, 8), make(chan struct{})
			c.beforeRead = func() {
				started <- struct{}{}
				<-proceed
			}
			const callers = 8
			type res struct {
				a   *Adapter
				err error
			}
			out := make(chan res, callers)
			var joined sync.WaitGroup
			joined.Add(callers)
			for range callers {
				go func() {
					joined.Done()
					a, err := c.Load(context.Background(), root, name)
					out <- res{a, err}
				}()
			}
			<-started // one read is under way, held
			joined.Wait()
			close(proceed) // a second read (no sharing) would pass the hook too and be counted
			var first res
			for i := range callers {
				r := <-out
				if i == 0 {
					first = r
				}
				require.Same(t, first.a, r.a)
				require.Equal(t, first.err == nil, r.err == nil)
			}
			require.EqualValues(t, 1, c.reads.Load(), "one read for %d callers", callers)
			if name == "zeros.safetensors" {
				require.ErrorIs(t, first.err, ErrInvalid)
			}
		})
	}
}

// TestFailureMemo: a bad file's error is answered from memory until FailFor passes or the file
// changes; a refused budget is not remembered.
func TestFailureMemo(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	p := filepath.Join(root, "bad.safetensors")
	require.NoError(t, os.WriteFile(p, make([]byte, 4096), 0o600))
	now := time.Unix(1e9, 0)
	c := NewCache(Options{FailFor: time.Minute})
	c.now = func() time.Time { return now }
	for range 3 {
		_, err := c.Load(ctx, root, "bad.safetensors")
		require.ErrorIs(t, err, ErrInvalid)
	}
	require.EqualValues(t, 1, c.reads.Load())
	now = now.Add(time.Minute)
	_, err := c.Load(ctx, root, "bad.safetensors")
	require.ErrorIs(t, err, ErrInvalid)
	require.EqualValues(t, 2, c.reads.Load(), "read again once the memo expires")
	require.NoError(t, os.WriteFile(p, build(t, good()), 0o600))
	_, err = c.Load(ctx, root, "bad.safetensors")
	require.NoError(t, err, "a fixed file is read again")
	require.EqualValues(t, 3, c.reads.Load())

	busy := errors.New("budget busy")
	b := NewCache(Options{Budget: budgetFunc(func(context.Context, int64) (func(), error) { return nil, busy })})
	for range 2 {
		_, err = b.Load(ctx, root, "bad.safetensors")
		require.ErrorIs(t, err, busy)
	}
	require.EqualValues(t, 2, b.reads.Load(), "a full budget is not the file's fault")
}

type budgetFunc func(context.Context, int64) (func(), error)

func (f budgetFunc) Acquire(ctx context.Context, n int64) (func(), error) { return f(ctx, n) }

// TestCacheByteBound: the cache keeps adapters within MaxBytes, evicting the least recently
// used; an adapter over the bound is used but not kept.
func TestCacheByteBound(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		require.NoError(t, os.WriteFile(filepath.Join(root, n+".safetensors"), build(t, good()), 0o600))
	}
	a, err := Parse(build(t, good()), "x")
	require.NoError(t, err)
	one := a.memBytes()
	c := NewCache(Options{Entries: 10, MaxBytes: 2 * one})
	load := func(n string) {
		_, err := c.Load(ctx, root, n+".safetensors")
		require.NoError(t, err)
	}
	load("a")
	load("b")
	load("a") // a is now the most recent
	require.EqualValues(t, 2, c.reads.Load())
	load("c") // evicts b
	require.EqualValues(t, 3, c.reads.Load())
	require.LessOrEqual(t, c.bytes, 2*one)
	load("a")
	require.EqualValues(t, 3, c.reads.Load(), "a was kept")
	load("b")
	require.EqualValues(t, 4, c.reads.Load(), "b was evicted")

	small := NewCache(Options{MaxBytes: one - 1})
	_, err = small.Load(ctx, root, "a.safetensors")
	require.NoError(t, err)
	require.Empty(t, small.entries, "over the bound: used, not kept")
}

// TestBudgetReservations: a checking load reserves the header's parse memory and then the
// streaming memory of its largest factor, and releases both.
func TestBudgetReservations(t *testing.T) {
	root := t.TempDir()
	b := build(t, good())
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.safetensors"), b, 0o600))
	var held, peak int64
	var got []int64
	budget := budgetFunc(func(_ context.Context, n int64) (func(), error) {
		got = append(got, n)
		held += n
		peak = max(peak, held)
		return func() { held -= n }, nil
	})
	a, err := NewCache(Options{Check: true, Budget: budget}).Load(context.Background(), root, "a.safetensors")
	require.NoError(t, err)
	hdr := int64(binary.LittleEndian.Uint64(b))
	require.Equal(t, []int64{headerCost(hdr), 5 * 5120 * 4}, got, "header, then the largest factor (5120 F32)")
	require.Equal(t, a.scanCost(), got[1])
	require.Zero(t, held, "released")
}

// TestFixtureScript parses what scripts/gen-lora-fixture.py writes (both layouts).
func TestFixtureScript(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is missing")
		}
		t.Skip("python3 is not installed; skipping")
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "..", "scripts", "gen-lora-fixture.py")
	for _, format := range []string{"kohya", "peft"} {
		out := filepath.Join(t.TempDir(), format+".safetensors")
		b, err := exec.Command(py, script, "--format", format, out).CombinedOutput()
		require.NoError(t, err, string(b))
		a, err := ParseFile(out)
		require.NoError(t, err)
		require.Len(t, a.Layers, 6)
		for _, l := range a.Layers {
			require.Equal(t, 4, l.Rank)
		}
	}
}
