package lora

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

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
	root := t.TempDir()
	p := filepath.Join(root, "a.safetensors")
	require.NoError(t, os.WriteFile(p, build(t, good()), 0o600))
	c := NewCache(1)
	a1, err := c.Load(root, "a.safetensors")
	require.NoError(t, err)
	a2, err := c.Load(root, "a.safetensors")
	require.NoError(t, err)
	require.Same(t, a1, a2)
	require.NoError(t, os.WriteFile(p, []byte("corrupt"), 0o600))
	_, err = c.Load(root, "a.safetensors")
	require.True(t, errors.Is(err, ErrInvalid), "a changed file is read again: %v", err)

	// A check cache keeps the verdict, not the tensors; non-finite factors are refused there.
	require.NoError(t, os.WriteFile(p, build(t, good()), 0o600))
	chk := NewCheckCache(1)
	a, err := chk.Load(root, "a.safetensors")
	require.NoError(t, err)
	require.Len(t, a.Layers, 2)
	for _, l := range a.Layers {
		require.Nil(t, l.Down.data)
		require.Nil(t, l.Up.data)
	}
	ts := good()
	ts[1].dtype, ts[1].vals[0] = "F32", float32(math.NaN())
	require.NoError(t, os.WriteFile(filepath.Join(root, "nan.safetensors"), build(t, ts), 0o600))
	_, err = chk.Load(root, "nan.safetensors")
	require.ErrorIs(t, err, ErrInvalid)
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
