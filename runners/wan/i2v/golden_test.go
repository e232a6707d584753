package i2v

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/wan/t2v"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/umt5"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/wangolden"
)

type call struct {
	Expert   int     `json:"expert"`
	Timestep int64   `json:"timestep"`
	Text     float32 `json:"text"`
	Input    string  `json:"input_sha256"`
}

type i2vGolden struct {
	StandIn struct {
		K, B []float32
	} `json:"vae_encoder_standin"`
	Preprocess []struct {
		Image    string   `json:"image"`
		Height   int      `json:"height"`
		Width    int      `json:"width"`
		SHA256   string   `json:"sha256"`
		HeadBits []uint32 `json:"head_bits"`
	} `json:"preprocess"`
	Runs []struct {
		Name        string   `json:"name"`
		Image       string   `json:"image"`
		LastImage   *string  `json:"last_image"`
		Frames      int      `json:"num_frames"`
		Height      int      `json:"height"`
		Width       int      `json:"width"`
		Steps       int      `json:"steps"`
		Scale       float64  `json:"guidance_scale"`
		Scale2      float64  `json:"guidance_scale_2"`
		Shift       float64  `json:"flow_shift"`
		Boundary    float64  `json:"boundary_ratio"`
		Seed        uint64   `json:"seed"`
		PromptState float32  `json:"prompt_state"`
		NegState    float32  `json:"negative_state"`
		VideoShape  []int    `json:"video_condition_shape"`
		VideoSHA    string   `json:"video_condition_sha256"`
		LatentShape []int    `json:"latent_shape"`
		LatentsSHA  string   `json:"latents_sha256"`
		CondShape   []int    `json:"condition_shape"`
		MaskBits    []uint32 `json:"mask_bits"`
		LatCondBits []uint32 `json:"latent_condition_bits"`
		Calls       []call   `json:"calls"`
		OutBits     []uint32 `json:"out_bits"`
	} `json:"runs"`
}

func readI2V(t *testing.T) i2vGolden { return wangolden.Load[i2vGolden](t, "i2v.json") }

func loadPNG(t *testing.T, name string) image.Image {
	t.Helper()
	f, err := os.Open(wangolden.Path(t, name))
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	img, err := png.Decode(f)
	require.NoError(t, err)
	return img
}

func digest(x []float32) string {
	buf := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	s := sha256.Sum256(buf)
	return hex.EncodeToString(s[:])
}

// TestPreprocessGolden: VideoProcessor.preprocess of PNG images (down- and upscaled, aspect
// changed, unchanged size, 832x480 and 1280x720 targets) bit for bit.
func TestPreprocessGolden(t *testing.T) {
	g := readI2V(t)
	for _, c := range g.Preprocess {
		got, err := Preprocess(loadPNG(t, c.Image), c.Height, c.Width)
		require.NoError(t, err)
		require.Len(t, got, 3*c.Height*c.Width)
		require.Equal(t, wangolden.Floats(c.HeadBits), got[:len(c.HeadBits)], "%s to %dx%d", c.Image, c.Width, c.Height)
		require.Equal(t, c.SHA256, digest(got), "%s to %dx%d", c.Image, c.Width, c.Height)
	}
}

// standIn is the golden script's stand-in models on the Device interface: the VAE encoder's
// strided sample times K plus B, the transformers' closed-form flow, the text encoder's
// constant states (the prompt's, or the negative prompt's when only eos is there).
type standIn struct {
	spec       t2v.Spec
	k, b       []float32
	cond, neg  float32
	mu         sync.Mutex
	video      []float32
	calls      []call
	final      []float32
	encodedLat []float32
}

func (d *standIn) Spec() t2v.Spec { return d.spec }

func (d *standIn) Encode(_ context.Context, ids, mask []int) ([]float32, error) {
	n := 0
	for _, m := range mask {
		n += m
	}
	v := d.cond
	if n == 1 { // "" is eos alone
		v = d.neg
	}
	out := make([]float32, d.spec.TextLen*d.spec.TextDim)
	for i := range out {
		out[i] = v
	}
	return out, nil
}

func (d *standIn) EncodeVideo(_ context.Context, video []float32) ([]float32, error) {
	d.video = append([]float32(nil), video...)
	sh := d.spec.Shape
	plane := sh.Height * sh.Width
	out := make([]float32, sh.Elems())
	for c := range t2v.LatentChannels {
		for k := range sh.LatentFrames {
			f := t2v.TemporalFactor * k
			for y := range sh.LatentHeight {
				for x := range sh.LatentWidth {
					v := video[((c%3)*sh.Frames+f)*plane+8*y*sh.Width+8*x]
					out[((c*sh.LatentFrames+k)*sh.LatentHeight+y)*sh.LatentWidth+x] = float32(v*d.k[c]) + d.b[c]
				}
			}
		}
	}
	d.encodedLat = out
	return out, nil
}

func (d *standIn) Transformer(_ context.Context, expert int, in []float32, t int64, text []float32) ([]float32, error) {
	n := d.spec.Shape.Elems()
	if len(in) != n/t2v.LatentChannels*InputChannels {
		return nil, fmt.Errorf("stand-in transformer: %d input values", len(in))
	}
	per := n / t2v.LatentChannels
	a := float32(0.25)
	if expert == t2v.LowNoise {
		a = -0.5
	}
	tt := float32(t) / 1000
	s := float32(text[0] * tt)
	out := make([]float32, n)
	for i := range out {
		c, p := i/per, i%per
		x, m, cd := in[i], in[t2v.LatentChannels*per+p], in[(t2v.LatentChannels+MaskChannels+c)*per+p]
		out[i] = float32(float32(float32(x*a)+float32(cd*0.5))+float32(m*0.125)) + s
	}
	d.mu.Lock()
	d.calls = append(d.calls, call{Expert: expert, Timestep: t, Text: text[0], Input: digest(in)})
	d.mu.Unlock()
	return out, nil
}

func (d *standIn) VAE(_ context.Context, latents []float32) ([]float32, error) {
	d.final = append([]float32(nil), latents...)
	sh := d.spec.Shape
	return make([]float32, 3*sh.Frames*sh.Height*sh.Width), nil
}

// TestPipelineGolden: whole WanImageToVideoPipeline.__call__ runs with stand-in models (first
// image; first and last image; no guidance with num_frames rounded; one frame; 40 steps at
// A14B's boundary 0.9): the conditioning video handed to the VAE encoder, the mask, the
// normalised condition, every transformer call's expert, timestep, text and 36-channel input,
// and the final latents, all bit for bit.
func TestPipelineGolden(t *testing.T) {
	g := readI2V(t)
	require.Len(t, g.StandIn.K, t2v.LatentChannels)
	require.Len(t, g.StandIn.B, t2v.LatentChannels)
	tok, err := umt5.Load(wangolden.Path(t, "umt5_test.model"))
	require.NoError(t, err)
	for _, r := range g.Runs {
		t.Run(r.Name, func(t *testing.T) {
			sh, err := t2v.ShapeFor(r.Frames, r.Height, r.Width)
			require.NoError(t, err)
			require.Equal(t, r.LatentShape, []int{1, t2v.LatentChannels, sh.LatentFrames, sh.LatentHeight, sh.LatentWidth})
			require.Equal(t, r.VideoShape, []int{1, 3, sh.Frames, sh.Height, sh.Width})
			dev := &standIn{spec: t2v.Spec{Shape: sh, TextLen: tok.MaxLen(), TextDim: 4}, k: g.StandIn.K, b: g.StandIn.B,
				cond: r.PromptState, neg: r.NegState}
			// The goldens are diffusers' WanImageToVideoPipeline at the I2V checkpoint's own
			// configuration (shift and boundary as recorded; no 2-step rule; an absent
			// negative prompt is ""), not HEAD's device defaults (Wan22Config).
			cfg := Wan22Config()
			cfg.Sampler.FlowShift, cfg.Guidance.BoundaryRatio = r.Shift, r.Boundary
			cfg.TwoStepLowNoise, cfg.DefaultNegativePrompt = false, ""
			p, err := New(dev, tok, cfg)
			require.NoError(t, err)
			images := []Image{{Image: loadPNG(t, r.Image), FramePos: 0}}
			if r.LastImage != nil {
				images = append(images, Image{Image: loadPNG(t, *r.LastImage), FramePos: sh.Frames - 1})
			}
			_, err = p.Generate(context.Background(), Request{Prompt: "a red ball rolls", Steps: r.Steps, Seed: r.Seed,
				Guidance: &t2v.Guidance{Scale: r.Scale, Scale2: r.Scale2}, Images: images}, t2v.Hooks{})
			require.NoError(t, err)
			require.Equal(t, r.VideoSHA, digest(dev.video), "the conditioning video")
			mask, err := Mask([]int{0}, sh.Frames, sh.LatentHeight, sh.LatentWidth)
			if r.LastImage != nil {
				mask, err = Mask([]int{0, sh.Frames - 1}, sh.Frames, sh.LatentHeight, sh.LatentWidth)
			}
			require.NoError(t, err)
			require.Equal(t, wangolden.Floats(r.MaskBits), mask, "the mask")
			require.Equal(t, wangolden.Floats(r.LatCondBits), dev.encodedLat, "the normalised latent condition")
			require.Equal(t, r.Calls, dev.calls, "transformer calls (expert, timestep, text, input digest)")
			want := wangolden.Floats(r.OutBits)
			t2v.Unnormalize(want) // pinned by t2v's TestUnnormalizeGolden
			require.Equal(t, want, dev.final, "the final latents")
		})
	}
}
