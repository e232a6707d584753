package diffusionpipeline

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/imageproc"
	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/latents"
)

// encDevice is fakeDevice with a VAE encoder (moments from the image: mean = first 4 channels'
// subsample, logvar constant) and a UNet of spec.UNetIn() input channels.
type encDevice struct {
	fakeDevice
	encIn [][]float32
}

func (f *encDevice) VAEEncode(_ context.Context, img []float32) ([]float32, error) {
	f.calls = append(f.calls, "vae_encode")
	f.encIn = append(f.encIn, append([]float32(nil), img...))
	return fakeMoments(img, f.spec), nil
}

func fakeMoments(img []float32, s Spec) []float32 {
	n := s.LatentElems()
	m := make([]float32, 2*n)
	for i := range n {
		m[i] = img[(i*37)%len(img)]
		m[n+i] = -2
	}
	return m
}

func (f *encDevice) UNet(ctx context.Context, sample []float32, t float32, cond *Cond) ([]float32, error) {
	out, err := f.fakeDevice.UNet(ctx, sample, t, cond)
	if err != nil {
		return nil, err
	}
	// Keep the first LatentChannels of each row (the noise prediction's shape).
	row, keep := len(sample)/cond.Batch, f.spec.LatentElems()
	res := make([]float32, 0, cond.Batch*keep)
	for b := range cond.Batch {
		res = append(res, out[b*row:b*row+keep]...)
	}
	return res, nil
}

func newEncFake(t *testing.T, unetIn int) (*Pipeline, *encDevice) {
	t.Helper()
	spec := smallSpec
	spec.UNetChannels = unetIn
	dev := &encDevice{fakeDevice: fakeDevice{spec: spec}}
	p, err := New(dev, testTokenizer(t), SDXLConfig())
	require.NoError(t, err)
	return p, dev
}

func testImage(s Spec) imageproc.Image {
	img := imageproc.Image{C: 3, H: s.ImageHeight, W: s.ImageWidth, Pix: make([]float32, 3*s.ImageHeight*s.ImageWidth)}
	for i := range img.Pix {
		img.Pix[i] = float32(i%255)/127.5 - 1
	}
	return img
}

// testMask repaints the left half.
func testMask(s Spec) *imageproc.Image {
	m := imageproc.Image{C: 1, H: s.ImageHeight, W: s.ImageWidth, Pix: make([]float32, s.ImageHeight*s.ImageWidth)}
	for y := range m.H {
		for x := range m.W / 2 {
			m.Pix[y*m.W+x] = 1
		}
	}
	return &m
}

func imgSequence(encodes, steps int) []string {
	s := []string{"encode"}
	for range encodes {
		s = append(s, "vae_encode")
	}
	for range steps {
		s = append(s, "unet")
	}
	return append(s, "vae")
}

func TestImg2ImgSequenceAndStart(t *testing.T) {
	p, dev := newEncFake(t, 0)
	in := ImageInput{Image: testImage(smallSpec), Strength: 0.6}
	req := Request{Prompt: "a cat", Steps: 20, GuidanceScale: 5, Seed: ptr(int64(7))}
	img, err := p.GenerateImage(context.Background(), req, in, Hooks{})
	require.NoError(t, err)
	require.Equal(t, 64, img.Rect.Dx())
	require.Equal(t, imgSequence(1, 12), dev.calls) // 20 * 0.6 steps
	full, err := p.Schedule(req)
	require.NoError(t, err)
	require.Equal(t, full.Timesteps[8:], dev.ts)
	require.Equal(t, in.Image.Pix, dev.encIn[0])

	// The first UNet input is scale_model_input(add_noise(latent sample, noise, t_start)), both
	// drawn from the request's generator in that order.
	gen, err := latents.NewGenerator(7, latents.KernelAVX2)
	require.NoError(t, err)
	n := smallSpec.LatentElems()
	lat := make([]float32, n)
	require.NoError(t, SampleLatentDist(context.Background(), lat, fakeMoments(in.Image.Pix, smallSpec), gen, 0.13025))
	noise := make([]float32, n)
	require.NoError(t, gen.FillNormal(context.Background(), noise))
	sub, err := full.From(8)
	require.NoError(t, err)
	want := make([]float32, n)
	require.NoError(t, sub.AddNoise(want, lat, noise, 0))
	require.NoError(t, sub.ScaleModelInput(want, want, 0))
	require.Equal(t, want, dev.samples[0][:n])
	require.Equal(t, want, dev.samples[0][n:], "guidance duplicates the row")
}

func TestInpaintNineChannels(t *testing.T) {
	for _, c := range []struct {
		strength float64
		encodes  int
		steps    int
	}{{0.6, 2, 6}, {1, 1, 10}} {
		p, dev := newEncFake(t, 9)
		in := ImageInput{Image: testImage(smallSpec), Mask: testMask(smallSpec), Strength: c.strength}
		_, err := p.GenerateImage(context.Background(), Request{Prompt: "a dog", Steps: 10, GuidanceScale: 1, Seed: ptr(int64(3))}, in, Hooks{})
		require.NoError(t, err)
		require.Equal(t, imgSequence(c.encodes, c.steps), dev.calls, "strength %v", c.strength)
		// The last encode is the masked image: the repaint half is 0.
		masked := dev.encIn[len(dev.encIn)-1]
		require.Zero(t, masked[0])
		require.Equal(t, in.Image.Pix[63], masked[63])
		// Each UNet row: 4 latent channels, the mask at latent size, 4 masked-image latent channels.
		plane := 64
		s := dev.samples[0]
		require.Len(t, s, 9*plane)
		for y := range 8 {
			for x := range 8 {
				want := float32(0)
				if x < 4 {
					want = 1
				}
				require.Equal(t, want, s[4*plane+y*8+x])
			}
		}
		require.Equal(t, s[5*plane:], dev.samples[len(dev.samples)-1][5*plane:], "the masked latents do not change between steps")
	}
}

func TestInpaintFourChannelBlend(t *testing.T) {
	p, dev := newEncFake(t, 0)
	in := ImageInput{Image: testImage(smallSpec), Mask: testMask(smallSpec), Strength: 0.5}
	_, err := p.GenerateImage(context.Background(), Request{Prompt: "a dog", Steps: 8, GuidanceScale: 1, Seed: ptr(int64(11))}, in, Hooks{})
	require.NoError(t, err)
	require.Equal(t, imgSequence(2, 4), dev.calls)
	// After the last step the kept half is the clean image latents (first draw of the generator).
	gen, err := latents.NewGenerator(11, latents.KernelAVX2)
	require.NoError(t, err)
	lat := make([]float32, smallSpec.LatentElems())
	require.NoError(t, SampleLatentDist(context.Background(), lat, fakeMoments(in.Image.Pix, smallSpec), gen, 0.13025))
	final := dev.vaeIn[0]
	for c := range 4 {
		for y := range 8 {
			for x := range 8 {
				k := (c*8+y)*8 + x
				if x >= 4 {
					require.InDelta(t, lat[k]/0.13025, final[k], 1e-5)
				} else {
					require.NotEqual(t, lat[k]/0.13025, final[k])
				}
			}
		}
	}
}

func TestImg2ImgErrors(t *testing.T) {
	p, dev := newEncFake(t, 0)
	img := testImage(smallSpec)
	req := Request{Prompt: "x", Steps: 10, GuidanceScale: 5}
	_, err := p.GenerateImage(context.Background(), req, ImageInput{Image: img, Strength: 0.05}, Hooks{})
	require.ErrorIs(t, err, runners.ErrBadRequest)
	require.ErrorContains(t, err, "strength")
	require.Empty(t, dev.calls, "refused before any device call")
	_, err = p.GenerateImage(context.Background(), req, ImageInput{Image: imageproc.Image{C: 3, H: 8, W: 8, Pix: make([]float32, 192)}, Strength: 0.5}, Hooks{})
	require.ErrorIs(t, err, runners.ErrBadRequest)

	nine, _ := newEncFake(t, 9)
	_, err = nine.GenerateImage(context.Background(), req, ImageInput{Image: img, Strength: 0.5}, Hooks{})
	require.ErrorIs(t, err, runners.ErrBadRequest)
	_, err = nine.Generate(context.Background(), req, nil)
	require.ErrorIs(t, err, runners.ErrBadRequest)

	plain, _ := newFake(t)
	_, err = plain.GenerateImage(context.Background(), req, ImageInput{Image: img, Strength: 0.5}, Hooks{})
	require.ErrorIs(t, err, ErrNoEncoder)
}
