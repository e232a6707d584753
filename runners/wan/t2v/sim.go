package t2v

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
)

// SimLatency is the simulated device time of each program call.
type SimLatency struct {
	Encode, Step, VAE time.Duration
}

// SimStats counts a SimDevice's program calls.
type SimStats struct {
	Encodes int
	// Steps counts transformer runs per expert (index HighNoise, LowNoise).
	Steps [3]int
	// Experts is the expert of every transformer run, in order.
	Experts   []int
	VAEs      int
	Timesteps []int64
}

// SimDevice is a Device whose programs are deterministic stand-ins with the declared
// programs' shapes and simulated latencies: the encoder hashes ids into states, each expert
// predicts a flow toward a moving pattern (stripes whose direction, colours and speed come
// from the text states, the low-noise expert sharper), and the VAE turns latent channels 0-2
// into colours, upsampled 8x and spread over 4 frames per latent frame (the first alone, as
// Wan's causal VAE does). The clip therefore moves and depends on prompt and seed.
type SimDevice struct {
	spec Spec
	lat  SimLatency
	mu   sync.Mutex
	st   SimStats
}

// NewSimDevice returns a simulated device for spec.
func NewSimDevice(spec Spec, lat SimLatency) *SimDevice { return &SimDevice{spec: spec, lat: lat} }

// Spec implements Device.
func (d *SimDevice) Spec() Spec { return d.spec }

// Stats returns the call counts so far.
func (d *SimDevice) Stats() SimStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.st
	s.Experts = append([]int(nil), d.st.Experts...)
	s.Timesteps = append([]int64(nil), d.st.Timesteps...)
	return s
}

// Encode implements Device.
func (d *SimDevice) Encode(ctx context.Context, ids, mask []int) ([]float32, error) {
	if len(ids) != d.spec.TextLen || len(mask) != d.spec.TextLen {
		return nil, fmt.Errorf("sim umt5 encoder: %d ids and %d mask values, the program takes %d", len(ids), len(mask), d.spec.TextLen)
	}
	if err := simdev.Sleep(ctx, d.lat.Encode); err != nil {
		return nil, err
	}
	out := make([]float32, d.spec.TextLen*d.spec.TextDim)
	for i, id := range ids {
		for j := range d.spec.TextDim {
			h := uint32(id)*2654435761 ^ uint32(j)*40503 ^ uint32(i)*97
			out[i*d.spec.TextDim+j] = float32(h%2001)/1000 - 1
		}
	}
	d.mu.Lock()
	d.st.Encodes++
	d.mu.Unlock()
	return out, nil
}

// Transformer implements Device: the flow x - target toward the pattern the text selects.
func (d *SimDevice) Transformer(ctx context.Context, expert int, x []float32, t int64, text []float32) ([]float32, error) {
	sh := d.spec.Shape
	if len(x) != sh.Elems() || len(text) != d.spec.TextLen*d.spec.TextDim {
		return nil, fmt.Errorf("sim wan transformer: %d latents and %d text values, the program takes %d and %d",
			len(x), len(text), sh.Elems(), d.spec.TextLen*d.spec.TextDim)
	}
	if expert != HighNoise && expert != LowNoise {
		return nil, fmt.Errorf("sim wan transformer: no expert %d", expert)
	}
	if err := simdev.Sleep(ctx, d.lat.Step); err != nil {
		return nil, err
	}
	var s [8]float64
	for i, v := range text {
		s[i%8] += float64(v)
	}
	kx, ky := 1+math.Abs(s[0])/float64(len(text))*64, 1+math.Abs(s[1])/float64(len(text))*64
	speed := 0.2 + math.Abs(s[2])/float64(len(text))*16
	sharp := 1.0
	if expert == LowNoise {
		sharp = 2
	}
	out := make([]float32, len(x))
	per := sh.LatentFrames * sh.LatentHeight * sh.LatentWidth
	for c := range LatentChannels {
		phase := s[3+c%5] + float64(c)
		for f := range sh.LatentFrames {
			for y := range sh.LatentHeight {
				for xx := range sh.LatentWidth {
					i := c*per + (f*sh.LatentHeight+y)*sh.LatentWidth + xx
					arg := 2*math.Pi*(kx*float64(xx)/float64(sh.LatentWidth)+ky*float64(y)/float64(sh.LatentHeight)) + phase + speed*float64(f)
					target := 1.5 * math.Tanh(sharp*math.Sin(arg))
					out[i] = x[i] - float32(target)
				}
			}
		}
	}
	d.mu.Lock()
	d.st.Steps[expert]++
	d.st.Experts = append(d.st.Experts, expert)
	d.st.Timesteps = append(d.st.Timesteps, t)
	d.mu.Unlock()
	return out, nil
}

// VAE implements Device.
func (d *SimDevice) VAE(ctx context.Context, x []float32) ([]float32, error) {
	sh := d.spec.Shape
	if len(x) != sh.Elems() {
		return nil, fmt.Errorf("sim wan VAE: %d latents, the program takes %d", len(x), sh.Elems())
	}
	if err := simdev.Sleep(ctx, d.lat.VAE); err != nil {
		return nil, err
	}
	per := sh.LatentFrames * sh.LatentHeight * sh.LatentWidth
	plane := sh.Height * sh.Width
	out := make([]float32, 3*sh.Frames*plane)
	for c := range 3 {
		for f := range sh.Frames {
			lf := (f + TemporalFactor - 1) / TemporalFactor
			for y := range sh.Height {
				for xx := range sh.Width {
					v := x[c*per+(lf*sh.LatentHeight+y/SpatialFactor)*sh.LatentWidth+xx/SpatialFactor] - LatentsMean[c]
					out[(c*sh.Frames+f)*plane+y*sh.Width+xx] = float32(math.Tanh(float64(v / LatentsStd[c])))
				}
			}
		}
	}
	d.mu.Lock()
	d.st.VAEs++
	d.mu.Unlock()
	return out, nil
}
