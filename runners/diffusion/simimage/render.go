package simimage

import (
	"encoding/binary"
	"image"
	"math"
	"math/rand/v2"
)

// render paints the mock diffusion output: a landscape-like picture (sky gradient, a wavy
// horizon over the ground, a sun with a halo, soft blobs, optional skyline) whose palette comes
// from the prompts and whose layout comes from the seed, left with film grain that fades as the
// number of steps grows. The scene is computed on a grid of about size/4 and upscaled
// bilinearly, which keeps a 1024² picture at a few milliseconds.
func render(p renderParams, size int) *image.RGBA {
	lowN := (size + 3) / 4
	lowN = max(1, min(lowN, 320))
	lo := paintScene(p, lowN)
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	upscale(img, lo, lowN, grainAmplitude(p.steps), p.detail)
	return img
}

// grainAmplitude is the residual noise (in 8-bit levels) after steps denoising steps.
func grainAmplitude(steps int) float32 {
	return float32(60 / math.Pow(float64(max(steps, 1)), 0.75))
}

type rgb struct{ r, g, b float32 }

func hsv(h, s, v float64) rgb {
	h = h - math.Floor(h)
	s = math.Max(0, math.Min(1, s))
	v = math.Max(0, math.Min(1, v))
	i := math.Floor(h * 6)
	f := h*6 - i
	p, q, t := v*(1-s), v*(1-s*f), v*(1-s*(1-f))
	var r, g, b float64
	switch int(i) % 6 {
	case 0:
		r, g, b = v, t, p
	case 1:
		r, g, b = q, v, p
	case 2:
		r, g, b = p, v, t
	case 3:
		r, g, b = p, q, v
	case 4:
		r, g, b = t, p, v
	default:
		r, g, b = v, p, q
	}
	return rgb{float32(r), float32(g), float32(b)}
}

func mix(a, b rgb, t float32) rgb {
	return rgb{a.r + (b.r-a.r)*t, a.g + (b.g-a.g)*t, a.b + (b.b-a.b)*t}
}

func smoothstep(e0, e1, x float32) float32 {
	t := (x - e0) / (e1 - e0)
	t = max(0, min(1, t))
	return t * t * (3 - 2*t)
}

// paletteSchemes are hue offsets of the five palette colours: sky top, sky bottom, ground,
// blobs and sun.
var paletteSchemes = [][5]float64{
	{0, 0.06, -0.07, 0.13, 0.5},    // analogous
	{0, 0.04, 0.5, 0.54, 0.1},      // complementary
	{0, 0.05, 0.333, 0.667, 0.38},  // triad
	{0, 0.08, 0.42, 0.58, 0.5},     // split complementary
	{0.55, 0.6, 0.08, 0.02, 0.12},  // warm ground under cool sky
	{0.0, 0.02, 0.0, 0.5, 0.25},    // near-monochrome with an accent
	{0.75, 0.85, 0.33, 0.15, 0.95}, // dusk
	{0.12, 0.1, 0.28, 0.95, 0.05},  // autumn
	{0.5, 0.52, 0.58, 0.05, 0.15},  // sea
	{0.3, 0.35, 0.22, 0.7, 0.12},   // forest
	{0.9, 0.95, 0.62, 0.45, 0.15},  // neon
	{0.58, 0.62, 0.1, 0.0, 0.14},   // desert
	{0.02, 0.98, 0.6, 0.33, 0.16},  // fire and ice
	{0.45, 0.4, 0.75, 0.2, 0.9},    // pastel
	{0.66, 0.7, 0.6, 0.13, 0.17},   // night
	{0.33, 0.3, 0.36, 0.0, 0.8},    // meadow
}

type blob struct {
	cx, cy, rx, ry, edge, alpha float32
	c                           rgb
}

type tower struct {
	x0, x1, h float32
	c         rgb
}

// paintScene returns an n×n RGB picture, values in [0,1], row-major.
func paintScene(p renderParams, n int) []float32 {
	prng := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(p.palette[0:]), binary.LittleEndian.Uint64(p.palette[8:])))
	lrng := rand.New(rand.NewPCG(p.layout, 0x9e3779b97f4a7c15))
	drng := rand.New(rand.NewPCG(p.detail, 0x2545f4914f6cdd1d))

	// Guidance: more guidance, more saturation and contrast (as strong CFG does).
	g := p.guidance
	satMul := math.Max(0.6, math.Min(1.9, 0.55+0.09*g))
	contrast := float32(math.Max(0.85, math.Min(1.6, 0.8+0.04*g)))

	h0 := prng.Float64()
	scheme := paletteSchemes[prng.IntN(len(paletteSchemes))]
	var pal [5]rgb
	for i, off := range scheme {
		s := (0.3 + 0.6*prng.Float64()) * satMul
		v := 0.35 + 0.6*prng.Float64()
		switch i {
		case 0: // sky top: lighter
			v = 0.55 + 0.4*prng.Float64()
		case 2: // ground: darker
			v = 0.2 + 0.45*prng.Float64()
		case 4: // sun: bright
			v, s = 0.9+0.1*prng.Float64(), s*0.8
		}
		pal[i] = hsv(h0+off+0.03*(prng.Float64()-0.5), s, v)
	}

	// Layout.
	tilt := float32(0.8 * (lrng.Float64() - 0.5))
	horizon := float32(0.45 + 0.3*lrng.Float64())
	type wave struct{ amp, freq, phase float32 }
	waves := make([]wave, 3)
	for k := range waves {
		waves[k] = wave{
			amp:   float32((0.01 + 0.07*lrng.Float64()) / float64(k+1)),
			freq:  float32(2 * math.Pi * float64(k+1) * (0.5 + 1.5*lrng.Float64())),
			phase: float32(2 * math.Pi * lrng.Float64()),
		}
	}
	sun := blob{
		cx: float32(0.1 + 0.8*lrng.Float64()), cy: horizon * float32(0.15+0.6*lrng.Float64()),
		alpha: 1, c: pal[4],
	}
	sun.rx = float32(0.04 + 0.09*lrng.Float64())
	sun.ry, sun.edge = sun.rx, sun.rx*0.08
	blobs := make([]blob, 2+lrng.IntN(4))
	for i := range blobs {
		rx := float32(0.05 + 0.2*lrng.Float64())
		blobs[i] = blob{
			cx: float32(lrng.Float64()), cy: float32(lrng.Float64()),
			rx: rx, ry: rx * float32(0.3+0.9*lrng.Float64()),
			edge:  rx * float32(0.1+0.6*lrng.Float64()),
			alpha: float32(0.45 + 0.45*lrng.Float64()),
			c:     mix(pal[3], pal[lrng.IntN(3)], float32(0.4*lrng.Float64())),
		}
	}
	var towers []tower
	if lrng.IntN(2) == 0 { // a skyline on the horizon
		x := float32(0.05 * lrng.Float64())
		for x < 1 {
			w := float32(0.03 + 0.08*lrng.Float64())
			towers = append(towers, tower{x0: x, x1: x + w, h: float32(0.05 + 0.25*lrng.Float64()), c: mix(pal[2], pal[3], float32(0.5*lrng.Float64()))})
			x += w + float32(0.1*lrng.Float64())
		}
	}
	furrows := float32(20 + 60*lrng.Float64())
	// Everything that is neither a prompt nor the seed (steps, guidance, its rescale, strength,
	// the input image, crop, custom schedules, LoRA) keeps the seed's composition but moves
	// its details, as at the same seed a real model's output keeps its layout while its
	// objects shift, grow and change shape: visible at any scale, not only in the grain.
	jitter := func(scale float64) float32 { return float32(scale * (2*drng.Float64() - 1)) }
	for i := range blobs {
		blobs[i].cx += jitter(0.07)
		blobs[i].cy += jitter(0.07)
		f := 1 + jitter(0.25)
		blobs[i].rx, blobs[i].ry, blobs[i].edge = blobs[i].rx*f, blobs[i].ry*(1+jitter(0.25)), blobs[i].edge*f
	}
	sun.cx += jitter(0.05)
	sun.cy += jitter(0.03)
	sun.rx *= 1 + jitter(0.2)
	sun.ry, sun.edge = sun.rx, sun.rx*0.08
	for k := range waves {
		waves[k].phase += jitter(0.8)
		waves[k].amp *= 1 + jitter(0.3)
	}
	horizon += jitter(0.03)
	tilt += jitter(0.1)
	for i := range towers {
		towers[i].h *= 1 + jitter(0.3)
	}
	furrows *= 1 + jitter(0.2)

	haloK := 1 / (2.25 * sun.rx * sun.rx)
	inv := 1 / float32(n)
	hy := make([]float32, n) // horizon height per column
	for x := 0; x < n; x++ {
		fx := (float32(x) + 0.5) * inv
		h := horizon
		for _, w := range waves {
			h += w.amp * float32(math.Sin(float64(w.freq*fx+w.phase)))
		}
		hy[x] = h
	}

	out := make([]float32, n*n*3)
	for y := 0; y < n; y++ {
		fy := (float32(y) + 0.5) * inv
		for x := 0; x < n; x++ {
			fx := (float32(x) + 0.5) * inv
			var c rgb
			h := hy[x]
			if fy < h {
				t := max(0, min(1, (fy+tilt*(fx-0.5))/h))
				c = mix(pal[0], pal[1], t)
				// Sun with a halo.
				dx, dy := fx-sun.cx, fy-sun.cy
				d2 := dx*dx + dy*dy
				c = mix(c, sun.c, 0.35/(1+d2*haloK))
				if d2 < sun.rx*sun.rx {
					d := float32(math.Sqrt(float64(d2)))
					c = mix(c, sun.c, 1-smoothstep(sun.rx-sun.edge, sun.rx, d))
				}
			} else {
				t := (fy - h) / max(1-h, 1e-3)
				c = mix(pal[2], rgb{pal[2].r * 0.35, pal[2].g * 0.35, pal[2].b * 0.35}, t)
				// Furrows narrowing towards the horizon: a triangle wave.
				ph := furrows * (fy - h) / (0.15 + t)
				stripe := 2 * float32(math.Abs(float64(ph-float32(math.Floor(float64(ph)))-0.5)))
				c = mix(c, pal[1], 0.12*stripe*(1-t))
			}
			for _, tw := range towers {
				if fx >= tw.x0 && fx < tw.x1 && fy < h+0.02 && fy > h-tw.h {
					c = mix(c, tw.c, 0.9)
				}
			}
			for _, b := range blobs {
				dx, dy := (fx-b.cx)/b.rx, (fy-b.cy)/b.ry
				q := dx*dx + dy*dy
				if q >= 1 {
					continue
				}
				d := float32(math.Sqrt(float64(q))) * b.rx
				c = mix(c, b.c, b.alpha*(1-smoothstep(b.rx-b.edge, b.rx, d)))
			}
			// Vignette and contrast.
			vx, vy := fx-0.5, fy-0.5
			v := 1 - 0.5*(vx*vx+vy*vy)
			i := (y*n + x) * 3
			out[i] = max(0, min(1, 0.5+(c.r*v-0.5)*contrast))
			out[i+1] = max(0, min(1, 0.5+(c.g*v-0.5)*contrast))
			out[i+2] = max(0, min(1, 0.5+(c.b*v-0.5)*contrast))
		}
	}
	return out
}

// upscale fills dst (size×size) from the n×n picture lo by bilinear interpolation and adds
// grain of the given amplitude from a generator seeded with seed. Rows of lo are first
// stretched horizontally (once each, in 8.8 fixed point), then every output row blends two
// stretched rows.
func upscale(dst *image.RGBA, lo []float32, n int, grain float32, seed uint64) {
	size := dst.Rect.Dx()
	scale := float32(n) / float32(size)
	coord := func(i int) (int, float32) {
		s := (float32(i)+0.5)*scale - 0.5
		s = max(0, min(float32(n-1), s))
		j := int(s)
		return j, s - float32(j)
	}
	x0 := make([]int, size)
	wx := make([]float32, size)
	for x := range size {
		x0[x], wx[x] = coord(x)
	}
	stretch := func(j int, out []int32) {
		src := lo[j*n*3 : (j+1)*n*3]
		for x := range size {
			a := x0[x] * 3
			b := min(x0[x]+1, n-1) * 3
			w := wx[x]
			o := out[x*4 : x*4+3 : x*4+3]
			o[0] = int32((src[a] + (src[b]-src[a])*w) * (255 * 256))
			o[1] = int32((src[a+1] + (src[b+1]-src[a+1])*w) * (255 * 256))
			o[2] = int32((src[a+2] + (src[b+2]-src[a+2])*w) * (255 * 256))
		}
	}
	top, bot := make([]int32, size*4), make([]int32, size*4)
	topJ, botJ := -1, -1
	// Grain: a signed byte scaled to ±grain levels, in 8.8 fixed point.
	gmul := int32(grain * 256 / 128)
	state := seed | 1
	for y := range size {
		j, fy := coord(y)
		j1 := min(j+1, n-1)
		if topJ != j {
			if botJ == j {
				top, bot = bot, top
			} else {
				stretch(j, top)
			}
			topJ, botJ = j, -1
		}
		if botJ != j1 {
			stretch(j1, bot)
			botJ = j1
		}
		wy := int32(fy * 256)
		row := dst.Pix[y*dst.Stride : y*dst.Stride+size*4]
		for x := 0; x+4 <= len(row); x += 4 {
			// xorshift64: one draw per pixel, shared by the channels (luminance grain).
			state ^= state << 13
			state ^= state >> 7
			state ^= state << 17
			noise := int32(int8(state>>56))*gmul + 128
			t := top[x : x+3 : x+3]
			u := bot[x : x+3 : x+3]
			o := row[x : x+4 : x+4]
			o[0] = clamp8((t[0] + (u[0]-t[0])*wy>>8 + noise) >> 8)
			o[1] = clamp8((t[1] + (u[1]-t[1])*wy>>8 + noise) >> 8)
			o[2] = clamp8((t[2] + (u[2]-t[2])*wy>>8 + noise) >> 8)
			o[3] = 255
		}
	}
}

func clamp8(v int32) uint8 {
	return uint8(max(0, min(255, v)))
}
