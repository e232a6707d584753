// Package wan is the video family (Wan2.2 T2V and I2V, and HEAD's other video runners: Mochi,
// LTX-2.3, MiniMax-H3): its simulated runner, which MODEL_RUNNER=mock with MODEL_SERVICE=video
// and every catalogued video model run in mock-device mode. The simulated runner spends the
// model's device time (MOCK_STEP_SECONDS per denoising step), tells progress after every step,
// stops at the next step when its task is cancelled, and makes a deterministic moving picture
// that depends on the prompt, the seed and the I2V images, at the size the request names (the
// server shrinks it by MOCK_VIDEO_SCALE in mock-device mode), with a soundtrack for the
// text-to-audio-video models. tt-wan2.2 and tt-wan2.2-i2v can instead run the Wan2.2 T2V and
// I2V host pipelines (runners/wan/t2v, runners/wan/i2v) on the simulator, and tt-wan2.2 on
// DEVICE_BACKEND=metal over compiled programs: PipelineRunner, chosen by PipelineFactory.
package wan

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"image"
	"math"
	"sync/atomic"

	xdraw "golang.org/x/image/draw"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/runners/simdev"
)

// Register adds every catalogued video model, each served by the simulated runner, except
// that tt-wan2.2 and tt-wan2.2-i2v run the Wan2.2 T2V and I2V host pipelines on the simulator
// when PipelineFactory can (MODEL_WEIGHTS_PATH with the UMT5 tokenizer, mock-device mode).
func Register(reg *runners.Registry) {
	for _, m := range runners.Models() {
		if m.Service == runners.ServiceVideo {
			f := Factory(m.Name)
			if m.Name == catalogue.RunnerWan22 || m.Name == catalogue.RunnerWan22I2V {
				reg.Register(m.Name, PipelineFactory(m.Name, f), f)
				continue
			}
			reg.Register(m.Name, f, f)
		}
	}
}

// Factory returns the simulated runner of a catalogued video model.
func Factory(model string) runners.Factory {
	return func(spec runners.WorkerSpec) (runners.Runner, error) {
		m, ok := runners.Lookup(model, spec.Settings)
		if !ok || m.Video == nil {
			return nil, fmt.Errorf("%w %q: not a video model", runners.ErrUnknownRunner, model)
		}
		return &simRunner{model: m.Name, spec: *m.Video, lat: simdev.LatencyFrom(spec.Settings)}, nil
	}
}

type simRunner struct {
	model  string
	spec   runners.VideoSpec
	lat    simdev.Latency
	closed atomic.Bool
}

// Warmup spends MOCK_WARMUP_SECONDS, as the pipeline's load and compile would.
func (r *simRunner) Warmup(ctx context.Context) error {
	if r.closed.Load() {
		return simdev.ErrClosed
	}
	if err := simdev.Sleep(ctx, r.lat.Warmup); err != nil {
		return fmt.Errorf("%s warm-up: %w", r.model, err)
	}
	return nil
}

// Close marks the runner closed.
func (r *simRunner) Close() error {
	r.closed.Store(true)
	return nil
}

// Run generates one clip per task.
func (r *simRunner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	if r.closed.Load() {
		return simdev.ClosedOutcomes(len(tasks))
	}
	return simdev.RunBatch(ctx, tasks, func(ctx context.Context, t runners.Task) (runners.Result, error) {
		req, err := runners.RequestAs[*runners.VideoRequest](t)
		if err != nil || req == nil {
			return nil, fmt.Errorf("%s: request is %T, not *runners.VideoRequest", r.model, t.Request)
		}
		return r.generate(ctx, req, t)
	})
}

// generate runs the denoising steps (progress after each; a cancelled task stops before the
// next) and renders the clip.
func (r *simRunner) generate(ctx context.Context, req *runners.VideoRequest, t runners.Task) (*runners.VideoResult, error) {
	steps := max(req.Steps, 1)
	progress := func(done int) error {
		if t.Progress != nil {
			t.Progress(done, steps)
		}
		if t.Emit != nil {
			return t.Emit(runners.VideoProgress{Done: done, Total: steps})
		}
		return nil
	}
	if err := progress(0); err != nil { // the device has taken the task
		return nil, fmt.Errorf("%s: %w", r.model, err)
	}
	for step := range steps {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: cancelled before step %d of %d: %w", r.model, step+1, steps, err)
		}
		if err := simdev.Sleep(ctx, r.lat.PerStep); err != nil {
			return nil, fmt.Errorf("%s: transformer step %d of %d: %w", r.model, step+1, steps, err)
		}
		if err := progress(step + 1); err != nil {
			return nil, fmt.Errorf("%s: after step %d of %d: %w", r.model, step+1, steps, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: cancelled before VAE decode: %w", r.model, err)
	}
	w, h, n := req.Width, req.Height, req.Frames
	if w <= 0 || h <= 0 || n <= 0 {
		return nil, &simdev.BadRequest{Msg: fmt.Sprintf("%s: clip size %dx%d with %d frames", r.model, w, h, n)}
	}
	res := &runners.VideoResult{Width: w, Height: h, FPS: r.spec.FPS, Frames: render(req, w, h, n)}
	if r.spec.Audio != nil { // a text-to-audio-video model: its soundtrack (audio.go)
		res.Audio = simAudio(req, *r.spec.Audio, n, r.spec.FPS)
	}
	return res, nil
}

// render draws the clip: a background whose two colours come from the prompt (and drift with
// time), and a bright disc whose path, size and speed come from the prompt and the seed; each
// I2V image is the frame at its position and fades into its neighbours over 8 frames.
func render(req *runners.VideoRequest, w, h, n int) [][]byte {
	sum := sha256.Sum256([]byte(req.Prompt + "\x00" + req.NegativePrompt))
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(req.Seed))
	motion := sha256.Sum256(append(sum[:], seed[:]...))
	c0 := [3]float64{float64(sum[0]), float64(sum[1]), float64(sum[2])}
	c1 := [3]float64{float64(sum[3]), float64(sum[4]), float64(sum[5])}
	disc := [3]float64{255 - c0[0]/2, 255 - c0[1]/2, 255 - c0[2]/2}
	fx := 1 + float64(motion[0]%3)
	fy := 1 + float64(motion[1]%2)
	phase := float64(motion[2]) / 255 * 2 * math.Pi
	radius := float64(min(w, h)) * (0.08 + float64(motion[3])/255*0.12)
	conds := map[int][]byte{}
	for _, im := range req.Images {
		conds[im.FramePos] = rgbOf(im.Image, w, h)
	}
	frames := make([][]byte, n)
	for i := range n {
		tt := float64(i) / float64(max(n-1, 1))
		cx := float64(w) * (0.5 + 0.35*math.Sin(2*math.Pi*fx*tt+phase))
		cy := float64(h) * (0.5 + 0.35*math.Cos(2*math.Pi*fy*tt+phase))
		drift := 0.5 + 0.5*math.Sin(2*math.Pi*tt)
		fr := make([]byte, w*h*3)
		for y := range h {
			for x := range w {
				a := (float64(x)/float64(w) + float64(y)/float64(h)) / 2
				a = a*0.7 + drift*0.3
				p := (y*w + x) * 3
				dx, dy := float64(x)-cx, float64(y)-cy
				inside := dx*dx+dy*dy <= radius*radius
				for c := range 3 {
					v := c0[c]*(1-a) + c1[c]*a
					if inside {
						v = disc[c]
					}
					fr[p+c] = byte(v)
				}
			}
		}
		for pos, img := range conds {
			d := i - pos
			if d < 0 {
				d = -d
			}
			if d >= 8 {
				continue
			}
			k := 1 - float64(d)/8
			for p := range fr {
				fr[p] = byte(float64(img[p])*k + float64(fr[p])*(1-k))
			}
		}
		frames[i] = fr
	}
	return frames
}

// rgbOf is img scaled to w×h as RGB24.
func rgbOf(img image.Image, w, h int) []byte {
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	xdraw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, img.Bounds(), xdraw.Src, nil)
	out := make([]byte, w*h*3)
	for p, q := 0, 0; p < len(out); p, q = p+3, q+4 {
		out[p], out[p+1], out[p+2] = dst.Pix[q], dst.Pix[q+1], dst.Pix[q+2]
	}
	return out
}
