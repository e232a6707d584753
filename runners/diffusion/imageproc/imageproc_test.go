package imageproc

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
	"github.com/tenstorrent/tt-media-server-go/media/imaging"
)

const hint = "make them with scripts/gen-img2img-goldens.sh DIFFUSERS_SRC (Debian python3-torch + a huggingface/diffusers checkout)"

type preprocessGolden struct {
	Target [2]int `json:"target"`
	Cases  []struct {
		Kind         string `json:"kind"`
		Input        string `json:"input"`
		Shape        []int  `json:"shape"`
		Golden       string `json:"golden"`
		LatentShape  []int  `json:"latent_shape"`
		LatentGolden string `json:"latent_golden"`
		MaskedOf     string `json:"masked_image_of"`
		MaskedGolden string `json:"masked_golden"`
	} `json:"cases"`
}

func readF32(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Zero(t, len(b)%4, path)
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func decode(t *testing.T, path string) image.Image {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	img, _, err := imaging.Decode(b, 1<<24)
	require.NoError(t, err)
	return img
}

// TestGolden checks image and mask preprocessing, the masked image and the mask's latent-size
// resize against diffusers' VaeImageProcessor and prepare_mask_latents, bit for bit (the
// Lanczos resize reproduces PIL's fixed-point arithmetic).
func TestGolden(t *testing.T) {
	dir := shareddata.Generated(t, "img2img", hint)
	raw, err := os.ReadFile(filepath.Join(dir, "preprocess.json"))
	require.NoError(t, err)
	var g preprocessGolden
	require.NoError(t, json.Unmarshal(raw, &g))
	h, w := g.Target[0], g.Target[1]
	var images, masks int
	for _, p := range paths() {
		for _, c := range g.Cases {
			t.Run(p.name+"/"+c.Input, func(t *testing.T) {
				defer p.use()()
				want := readF32(t, filepath.Join(dir, c.Golden))
				switch c.Kind {
				case "image":
					images++
					got, err := Preprocess(imaging.ToRGB(decode(t, filepath.Join(dir, c.Input))), h, w)
					require.NoError(t, err)
					require.Equal(t, []int{1, got.C, got.H, got.W}, c.Shape)
					require.Equal(t, want, got.Pix)
				case "mask":
					masks++
					ch, err := MaskChannel(decode(t, filepath.Join(dir, c.Input)), false)
					require.NoError(t, err)
					got, err := PreprocessMask(ch, h, w)
					require.NoError(t, err)
					require.Equal(t, []int{1, 1, h, w}, c.Shape)
					require.Equal(t, want, got.Pix)
					lat, err := Nearest(got, c.LatentShape[2], c.LatentShape[3])
					require.NoError(t, err)
					require.Equal(t, readF32(t, filepath.Join(dir, c.LatentGolden)), lat.Pix)
					photo, err := Preprocess(imaging.ToRGB(decode(t, filepath.Join(dir, c.MaskedOf))), h, w)
					require.NoError(t, err)
					masked, err := Masked(photo, got)
					require.NoError(t, err)
					require.Equal(t, readF32(t, filepath.Join(dir, c.MaskedGolden)), masked.Pix)
				default:
					t.Fatalf("unknown case kind %q", c.Kind)
				}
			})
		}
	}
	require.Positive(t, images)
	require.Positive(t, masks)
}

func TestMaskChannel(t *testing.T) {
	gray := image.NewGray(image.Rect(0, 0, 2, 1))
	gray.Pix = []uint8{0, 200}
	rgbGray := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	rgbGray.Pix = []uint8{10, 10, 10, 255, 250, 250, 250, 255}
	colour := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	colour.Pix = []uint8{10, 10, 10, 255, 250, 0, 250, 255}
	// A PNG without alpha decodes to RGBA: its bytes are the values (white must stay 255).
	opaque := image.NewRGBA(image.Rect(0, 0, 4, 1))
	opaque.Pix = []uint8{0, 0, 0, 255, 127, 127, 127, 255, 128, 128, 128, 255, 255, 255, 255, 255}
	half := image.NewRGBA(image.Rect(0, 0, 2, 1)) // premultiplied: (100,100,100) at alpha 128
	half.Pix = []uint8{50, 50, 50, 128, 255, 255, 255, 255}
	pal := image.NewPaletted(image.Rect(0, 0, 2, 1), color.Palette{color.Gray{0}, color.Gray{255}})
	pal.Pix = []uint8{1, 0}
	alpha := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	alpha.Pix = []uint8{200, 10, 30, 0, 1, 2, 3, 255} // colour under alpha does not matter
	for _, c := range []struct {
		name  string
		img   image.Image
		alpha bool
		want  []uint8
		err   error
	}{
		{"gray", gray, false, []uint8{0, 200}, nil},
		{"rgb gray", rgbGray, false, []uint8{10, 250}, nil},
		{"colour", colour, false, nil, ErrMask},
		{"colour with alpha rule but opaque", colour, true, nil, ErrMask},
		{"alpha marks (OpenAI)", alpha, true, []uint8{255, 0}, nil},
		{"rgb png (RGBA, opaque)", opaque, false, []uint8{0, 127, 128, 255}, nil},
		{"rgb png, alpha rule, opaque", opaque, true, []uint8{0, 127, 128, 255}, nil},
		{"premultiplied alpha marks", half, true, []uint8{127, 0}, nil},
		{"paletted gray", pal, false, []uint8{255, 0}, nil},
		{"alpha dropped (HEAD): colour", alpha, false, nil, ErrMask},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := MaskChannel(c.img, c.alpha)
			if c.err != nil {
				require.True(t, errors.Is(err, c.err), "%v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got.Pix)
		})
	}
}

func TestPreprocessRange(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 3, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 11)
	}
	got, err := Preprocess(img, 2, 3) // same size: no resize
	require.NoError(t, err)
	require.Equal(t, float32(-1), got.Pix[0])
	for _, v := range got.Pix {
		require.True(t, v >= -1 && v <= 1)
	}
	_, err = Preprocess(img, 0, 3)
	require.Error(t, err)
	_, err = Nearest(Image{C: 1, H: 2, W: 2, Pix: make([]float32, 3)}, 1, 1)
	require.Error(t, err)
	_, err = Masked(got, Image{C: 1, H: 1, W: 3, Pix: make([]float32, 3)})
	require.Error(t, err)
}

// benchImage is a 1920x1080 photo-like picture (gradients and noise-free edges).
func benchImage() *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, 1920, 1080))
	for y := range 1080 {
		for x := range 1920 {
			o := img.PixOffset(x, y)
			img.Pix[o], img.Pix[o+1], img.Pix[o+2], img.Pix[o+3] = uint8(x*255/1919), uint8(y*255/1079), uint8((x+y)*7), 255
		}
	}
	return img
}

// BenchmarkPreprocess is VaeImageProcessor.preprocess of a 1920x1080 RGB image to SDXL's
// 1024x1024 (Lanczos, [-1, 1]); scripts/bench-img2img-preprocess.sh runs Pillow's side by side.
func BenchmarkPreprocess(b *testing.B) {
	img := benchImage()
	matchesPillow(b, "image.f32", func() (Image, error) { return Preprocess(img, 1024, 1024) })
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if _, err := Preprocess(img, 1024, 1024); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPreprocessMask is the mask processor on a 1920x1080 grayscale mask.
func BenchmarkPreprocessMask(b *testing.B) {
	m := image.NewGray(image.Rect(0, 0, 1920, 1080))
	for i := range m.Pix {
		m.Pix[i] = uint8(i % 251)
	}
	matchesPillow(b, "mask.f32", func() (Image, error) { return PreprocessMask(m, 1024, 1024) })
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if _, err := PreprocessMask(m, 1024, 1024); err != nil {
			b.Fatal(err)
		}
	}
}

var pillowRef = flag.String("pillow-ref", "", "a directory with Pillow's outputs for the benchmark inputs "+
	"(image.f32, mask.f32; scripts/bench-img2img-preprocess.sh writes them): the benchmarks fail unless ours are bit-identical")

// matchesPillow fails the benchmark when -pillow-ref is given and run's output differs from
// Pillow's in any bit.
func matchesPillow(b *testing.B, name string, run func() (Image, error)) {
	if *pillowRef == "" {
		return
	}
	raw, err := os.ReadFile(filepath.Join(*pillowRef, name))
	if err != nil {
		b.Fatal(err)
	}
	got, err := run()
	if err != nil {
		b.Fatal(err)
	}
	if len(raw) != 4*len(got.Pix) {
		b.Fatalf("%s: not bit-identical: Pillow's has %d bytes, ours %d values", name, len(raw), len(got.Pix))
	}
	for i, v := range got.Pix {
		if w := binary.LittleEndian.Uint32(raw[4*i:]); w != math.Float32bits(v) {
			b.Fatalf("%s: not bit-identical at value %d: ours %v, Pillow's %v", name, i, v, math.Float32frombits(w))
		}
	}
}

// cpuPerOp reports the process's CPU time per iteration (cpu-ns/op) when the returned function
// runs: on a shared machine the wall time counts other processes' slices, CPU time does not.
func cpuPerOp(b *testing.B) func() {
	start := cpuNanos(b)
	return func() { b.ReportMetric(float64(cpuNanos(b)-start)/float64(b.N), "cpu-ns/op") }
}

func cpuNanos(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// TestResizeMatchesPILResize holds the fast resize (two lanes per multiply, padded windows,
// fused output table) to media/imaging's plain transcription of Pillow's Resample.c, byte for
// byte, over sizes that reach every path: down- and upscaling, one pass skipped, odd row
// counts, widths that are not a multiple of eight, tiny images narrower than the filter, and
// sub-images whose rows do not start at the buffer's start; the AVX2 kernels (where the CPU has
// them) and the portable path.
func TestResizeMatchesPILResize(t *testing.T) {
	for _, p := range paths() {
		t.Run(p.name, func(t *testing.T) {
			defer p.use()()
			testResizeMatchesPILResize(t)
		})
	}
}

// path is one implementation of the resize: use selects it until the returned function runs.
type path struct {
	name string
	use  func() func()
}

func paths() []path {
	sel := func(on bool) func() func() {
		return func() func() {
			was := hasSIMD
			hasSIMD = on
			return func() { hasSIMD = was }
		}
	}
	ps := []path{{"portable", sel(false)}}
	if hasSIMD {
		ps = append(ps, path{"simd", sel(true)}, path{"simd in 3 shares", func() func() {
			undo := sel(true)()
			pp, mp := parallelPixels, minParts
			parallelPixels, minParts = 1, 3
			return func() { parallelPixels, minParts = pp, mp; undo() }
		}})
	}
	return ps
}

func testResizeMatchesPILResize(t *testing.T) {
	var ident [256]float32
	for i := range ident {
		ident[i] = float32(i)
	}
	rng := uint32(1)
	next := func() uint8 { rng = rng*1664525 + 1013904223; return uint8(rng >> 24) }
	sizes := []struct{ w, h, ow, oh int }{
		{480, 270, 256, 256}, {37, 23, 96, 64}, {160, 120, 96, 64}, {97, 65, 96, 64},
		{96, 64, 96, 64}, {96, 63, 96, 64}, {95, 64, 96, 64}, {3, 2, 17, 9}, {1, 1, 5, 3},
		{2, 7, 1, 1}, {40, 24, 300, 200}, {301, 7, 13, 29}, {8, 300, 9, 31}, {16, 16, 15, 17},
	}
	for range 24 {
		sizes = append(sizes, struct{ w, h, ow, oh int }{1 + int(next())%160, 1 + int(next())%160, 1 + int(next())%160, 1 + int(next())%160})
	}
	for _, c := range sizes {
		for _, ch := range []int{1, 3} {
			// A sub-image: one spare pixel left and top, rows padded.
			full := image.NewNRGBA(image.Rect(0, 0, c.w+1, c.h+1))
			gfull := image.NewGray(image.Rect(0, 0, c.w+3, c.h+1))
			for i := range full.Pix {
				full.Pix[i] = next()
			}
			for i := range gfull.Pix {
				gfull.Pix[i] = next()
			}
			var src source
			packed := make([]uint8, 0, ch*c.w*c.h)
			if ch == 3 {
				img := full.SubImage(image.Rect(1, 1, c.w+1, c.h+1)).(*image.NRGBA)
				src = source{Pix: img.Pix, Stride: img.Stride, BPP: 4, Ch: 3, W: c.w, H: c.h}
				for y := range c.h {
					for x := range c.w {
						o := img.PixOffset(x+1, y+1)
						packed = append(packed, img.Pix[o:o+3]...)
					}
				}
			} else {
				img := gfull.SubImage(image.Rect(1, 1, c.w+1, c.h+1)).(*image.Gray)
				src = source{Pix: img.Pix, Stride: img.Stride, BPP: 1, Ch: 1, W: c.w, H: c.h}
				for y := range c.h {
					packed = append(packed, img.Pix[y*img.Stride:y*img.Stride+c.w]...)
				}
			}
			want := imaging.PILResize(packed, c.w, c.h, ch, c.ow, c.oh, imaging.PILLanczos)
			got := make([]float32, ch*c.ow*c.oh)
			resize(src, c.ow, c.oh, &ident, got)
			for i, v := range want {
				px, pc := i/ch, i%ch
				if g := got[pc*c.ow*c.oh+px]; g != float32(v) {
					t.Fatalf("%dx%d -> %dx%d, %d channels: pixel %d channel %d is %v, Pillow's %d", c.w, c.h, c.ow, c.oh, ch, px, pc, g, v)
				}
			}
		}
	}
}

// TestLaneHeadroom checks what the two-lane sums and the lut rely on: for every size pair the
// absolute sum of an output's fixed-point Lanczos weights keeps 255 times it (plus the rounding
// offset) inside an int32 and its top bits inside the lut's [-512, 512) (it peaks near 1.57).
func TestLaneHeadroom(t *testing.T) {
	sizes := []int{1920, 1080, 1024, 4000}
	for n := 1; n <= 64; n++ {
		sizes = append(sizes, n)
	}
	for _, in := range sizes {
		for _, out := range sizes {
			c := imaging.NewPILCoeffs(in, out, imaging.PILLanczos)
			for i := range out {
				var s int64
				for _, k := range c.K[i*c.KSize : i*c.KSize+c.Bounds[2*i+1]] {
					s += max(int64(k), -int64(k))
				}
				if 255*s+1<<(imaging.PILPrecisionBits-1) >= 1<<31 || 255*s>>imaging.PILPrecisionBits >= 511 {
					t.Fatalf("%d -> %d, output %d: weights' absolute sum %d too large", in, out, i, s)
				}
			}
		}
	}
}
