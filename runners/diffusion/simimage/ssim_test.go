package simimage

import (
	"fmt"
	"image"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
)

// ssim is the mean structural similarity (Wang et al. 2004) of two equal-size pictures'
// luma (ITU-R BT.601), with the paper's 11x11 Gaussian window (sigma 1.5), K1 0.01, K2 0.03,
// L 255, over the positions where the window fits (scikit-image's
// structural_similarity(gaussian_weights=True, sigma=1.5, use_sample_covariance=False) on the
// grayscale picture).
func ssim(a, b *image.RGBA) float64 {
	w, h := a.Rect.Dx(), a.Rect.Dy()
	luma := func(p *image.RGBA) []float64 {
		out := make([]float64, w*h)
		for y := range h {
			for x := range w {
				o := p.PixOffset(p.Rect.Min.X+x, p.Rect.Min.Y+y)
				out[y*w+x] = 0.299*float64(p.Pix[o]) + 0.587*float64(p.Pix[o+1]) + 0.114*float64(p.Pix[o+2])
			}
		}
		return out
	}
	const r = 5
	var k [2*r + 1]float64
	sum := 0.0
	for i := range k {
		d := float64(i - r)
		k[i] = math.Exp(-d * d / (2 * 1.5 * 1.5))
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	// blur is the separable Gaussian filter over the valid region ((w-2r) x (h-2r)).
	blur := func(v []float64) []float64 {
		tmp := make([]float64, (w-2*r)*h)
		for y := range h {
			for x := r; x < w-r; x++ {
				s := 0.0
				for i, kv := range k {
					s += kv * v[y*w+x-r+i]
				}
				tmp[y*(w-2*r)+x-r] = s
			}
		}
		vw := w - 2*r
		out := make([]float64, vw*(h-2*r))
		for y := r; y < h-r; y++ {
			for x := range vw {
				s := 0.0
				for i, kv := range k {
					s += kv * tmp[(y-r+i)*vw+x]
				}
				out[(y-r)*vw+x] = s
			}
		}
		return out
	}
	la, lb := luma(a), luma(b)
	prod := func(p, q []float64) []float64 {
		out := make([]float64, len(p))
		for i := range p {
			out[i] = p[i] * q[i]
		}
		return out
	}
	ma, mb := blur(la), blur(lb)
	saa, sbb, sab := blur(prod(la, la)), blur(prod(lb, lb)), blur(prod(la, lb))
	c1, c2 := (0.01*255)*(0.01*255), (0.03*255)*(0.03*255)
	total := 0.0
	for i := range ma {
		va, vb, cov := saa[i]-ma[i]*ma[i], sbb[i]-mb[i]*mb[i], sab[i]-ma[i]*mb[i]
		total += (2*ma[i]*mb[i] + c1) * (2*cov + c2) / ((ma[i]*ma[i] + mb[i]*mb[i] + c1) * (va + vb + c2))
	}
	return total / float64(len(ma))
}

// shrink is a box-filtered 1/f-size copy of p (f divides its sides): the picture as a client
// that compares thumbnails, or JPEG at a low quality, sees it, without pixel-level grain.
func shrink(p *image.RGBA, f int) *image.RGBA {
	w, h := p.Rect.Dx()/f, p.Rect.Dy()/f
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			var s [3]int
			for dy := range f {
				for dx := range f {
					o := p.PixOffset(x*f+dx, y*f+dy)
					s[0], s[1], s[2] = s[0]+int(p.Pix[o]), s[1]+int(p.Pix[o+1]), s[2]+int(p.Pix[o+2])
				}
			}
			o := out.PixOffset(x, y)
			for c := range 3 {
				out.Pix[o+c] = uint8((s[c] + f*f/2) / (f * f))
			}
			out.Pix[o+3] = 255
		}
	}
	return out
}

func TestSSIMHelper(t *testing.T) {
	a := gen(t, New(catalogue.RunnerSDXL, 64, simdev.Latency{}), baseRequest())
	require.InDelta(t, 1.0, ssim(a, a), 1e-12)
	flat := solid(64, 64, 128)
	noisy := solid(64, 64, 128)
	for i := range noisy.Pix {
		if i%4 != 3 && (i/4)%2 == 0 {
			noisy.Pix[i] = 160
		}
	}
	require.Less(t, ssim(flat, noisy), 0.9, "a checkerboard of 32 levels on a flat picture")
	require.InDelta(t, ssim(flat, noisy), ssim(noisy, flat), 1e-12)
}

// TestImageRespondsToEveryParameter is issue 27 item 5 on every catalogued image runner: the
// same request twice gives SSIM >= 0.95 (identical), and any single change of prompt, negative
// prompt, seed, steps, guidance_scale, guidance_rescale or (image-to-image, inpainting)
// strength gives SSIM < 0.98 against the original. A change of a field the model refuses (its
// catalogue policy's Unused: Flux's negative prompt, schnell's and Z-Image-Turbo's guidance) is
// a 400 naming the field, not a picture: the table says "refused (400)". It prints the table.
func TestImageRespondsToEveryParameter(t *testing.T) {
	// 192: large enough for the 11x11 window at a quarter size, small enough for -race.
	const size = 192
	// The input of image-to-image and inpainting: a photo-like gradient with a disc; the
	// inpainting mask repaints the middle 60% of the width (a typical object mask).
	init := image.NewRGBA(image.Rect(0, 0, 96, 96))
	for y := range 96 {
		for x := range 96 {
			o := init.PixOffset(x, y)
			c := [3]uint8{uint8(x * 255 / 95), uint8(y * 255 / 95), uint8((x + y) * 3)}
			if (x-40)*(x-40)+(y-50)*(y-50) < 400 {
				c = [3]uint8{240, 220, 30}
			}
			copy(init.Pix[o:], []uint8{c[0], c[1], c[2], 255})
		}
	}
	mask := image.NewGray(init.Rect)
	for y := 10; y < 86; y++ {
		for x := 19; x < 77; x++ {
			mask.Pix[y*96+x] = 255
		}
	}
	base := func(model string) *runners.ImageRequest {
		req := &runners.ImageRequest{Prompt: "a lighthouse at dusk, volumetric light", NegativePrompt: "blurry",
			Seed: i64(42), GuidanceScale: 7.5, NumInferenceSteps: 20}
		switch model {
		case catalogue.RunnerSDXLImg2Img:
			req.InitImage, req.Strength = init, 0.6
		case catalogue.RunnerSDXLEdit:
			req.InitImage, req.Mask, req.Strength = init, mask, 0.99
		}
		return req
	}
	changes := []struct {
		name  string
		field string // the request field changed: a model that refuses it (its catalogue
		// policy's Unused, a 400 naming it) has no picture to compare
		change func(r *runners.ImageRequest)
		inputs bool // image-to-image and inpainting only
	}{
		{"same request", "", func(*runners.ImageRequest) {}, false},
		{"prompt", "prompt", func(r *runners.ImageRequest) { r.Prompt += "!" }, false},
		{"negative prompt", "negative_prompt", func(r *runners.ImageRequest) { r.NegativePrompt = "blurry, low quality" }, false},
		{"seed 42 -> 43", "seed", func(r *runners.ImageRequest) { r.Seed = i64(43) }, false},
		{"steps 20 -> 21", "num_inference_steps", func(r *runners.ImageRequest) { r.NumInferenceSteps = 21 }, false},
		{"guidance 7.5 -> 8.5", "guidance_scale", func(r *runners.ImageRequest) { r.GuidanceScale = 8.5 }, false},
		{"guidance_rescale 0 -> 0.1", "guidance_rescale", func(r *runners.ImageRequest) { r.GuidanceRescale = 0.1 }, false},
		{"strength +0.05", "strength", func(r *runners.ImageRequest) { r.Strength -= 0.05 }, true},
	}
	refuses := func(model, field string) bool {
		m, ok := catalogue.Lookup(model)
		require.True(t, ok, model)
		return slices.ContainsFunc(m.Image.Unused, func(f catalogue.Field) bool { return f.Name == field })
	}
	// Every image runner of the catalogue (the new ones as they are catalogued).
	var models []string
	for _, m := range runners.Models() {
		if m.Service == runners.ServiceImage {
			models = append(models, m.Name)
		}
	}
	require.Subset(t, models, []string{catalogue.RunnerSDXL, catalogue.RunnerSD35, catalogue.RunnerSDXLImg2Img, catalogue.RunnerSDXLEdit})
	var table strings.Builder
	fmt.Fprintf(&table, "SSIM against the original request: full %dx%d / box-shrunk to %dx%d\n%-28s", size, size, size/4, size/4, "change")
	for _, m := range models {
		fmt.Fprintf(&table, " %22s", m)
	}
	table.WriteString("\n")
	got := map[string]map[string][2]float64{}
	for _, m := range models {
		r := New(m, size, simdev.Latency{})
		orig := gen(t, r, base(m))
		got[m] = map[string][2]float64{}
		for _, c := range changes {
			if c.inputs && base(m).InitImage == nil || refuses(m, c.field) {
				continue
			}
			req := base(m)
			c.change(req)
			// A fresh runner each time: nothing cached is reused.
			img := gen(t, New(m, size, simdev.Latency{}), req)
			got[m][c.name] = [2]float64{ssim(orig, img), ssim(shrink(orig, 4), shrink(img, 4))}
		}
	}
	for _, c := range changes {
		fmt.Fprintf(&table, "%-28s", c.name)
		for _, m := range models {
			switch v, ok := got[m][c.name]; {
			case ok:
				fmt.Fprintf(&table, " %10.4f / %9.4f", v[0], v[1])
			case refuses(m, c.field):
				fmt.Fprintf(&table, " %22s", "refused (400)")
			default:
				fmt.Fprintf(&table, " %22s", "-")
			}
		}
		table.WriteString("\n")
	}
	t.Log("\n" + table.String())
	for _, m := range models {
		for name, v := range got[m] {
			for k, what := range []string{"full size", "shrunk"} {
				if name == "same request" {
					require.GreaterOrEqual(t, v[k], 0.95, "%s: %s (%s)", m, name, what)
				} else {
					require.Less(t, v[k], 0.98, "%s: %s (%s)", m, name, what)
				}
			}
		}
	}
}
