package procrunner

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// The Python worker (workers/python/tt_worker.py) against this package: every frame it sends
// validates against the published schema, and the Go parent drives it as it drives the Go
// worker.

const pythonExe = "/usr/bin/python3"

// pythonWorker returns the worker script and the fake runners' directory, skipping (failing in
// CI) when Debian's python3 with PIL and numpy is absent.
func pythonWorker(t *testing.T) (script, fakes string) {
	t.Helper()
	if out, err := exec.Command(pythonExe, "-c", "import PIL, numpy").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("%s with PIL and numpy is needed (scripts/install-python-worker-deps.sh): %v %s", pythonExe, err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "workers", "python"))
	require.NoError(t, err)
	// The plain road: the fakes over our stand-ins of HEAD's base and request classes.
	fakes = filepath.Join(dir, "fakes")
	return filepath.Join(dir, "tt_worker.py"), fakes + string(os.PathListSeparator) + filepath.Join(fakes, "plain")
}

func pythonEnv(fakes string, extra ...string) []string {
	return append([]string{"PYTHON_RUNNER_PATH=" + fakes, "TT_VISIBLE_DEVICES=0", "MOCK_WARMUP_SECONDS=0",
		"MOCK_STEP_SECONDS=0.01", "MOCK_AUDIO_SECONDS_PER_SECOND=0.01", "MOCK_CNN_SECONDS=0", "PYTHONDONTWRITEBYTECODE=1"}, extra...)
}

// rawPython starts the worker as a bare subprocess: the test speaks the protocol itself.
type rawPython struct {
	in     io.WriteCloser
	out    io.Reader
	schema *jsonschema.Schema
	t      *testing.T
}

func startRawPython(t *testing.T, runner string) *rawPython {
	script, fakes := pythonWorker(t)
	cmd := exec.Command(pythonExe, "-u", script, "0", runner)
	cmd.Env = append(os.Environ(), pythonEnv(fakes)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			require.NoError(t, err, "the worker exits 0 when its stdin closes; stderr:\n%s", stderr.String())
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("the worker did not exit within 5 s of its stdin closing; stderr:\n%s", stderr.String())
		}
	})
	return &rawPython{in: in, out: out, schema: protocolSchema(t), t: t}
}

func (p *rawPython) send(m *message) {
	p.t.Helper()
	require.NoError(p.t, writeFrame(p.in, m))
}

// next reads the next frame that is not a heartbeat, checking every frame against the schema.
func (p *rawPython) next() *message {
	p.t.Helper()
	for {
		var lenField [4]byte
		_, err := io.ReadFull(p.out, lenField[:])
		require.NoError(p.t, err)
		n := int(lenField[0])<<24 | int(lenField[1])<<16 | int(lenField[2])<<8 | int(lenField[3])
		body := make([]byte, n)
		_, err = io.ReadFull(p.out, body)
		require.NoError(p.t, err)
		frame := append(lenField[:], body...)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(frameHeader(p.t, frame)))
		require.NoError(p.t, err)
		require.NoError(p.t, p.schema.Validate(inst), "python frame %s", frameHeader(p.t, frame))
		m, err := readFrame(bytes.NewReader(frame))
		require.NoError(p.t, err)
		if m.Kind != kindHeartbeat {
			return m
		}
	}
}

func TestPythonWorkerSpeaksTheProtocol(t *testing.T) {
	t.Parallel()
	t.Run("version mismatch", func(t *testing.T) {
		t.Parallel()
		p := startRawPython(t, "tt-xla-resnet")
		p.send(&message{Kind: kindWarmup, Version: 2, Heartbeat: millis(time.Second)})
		m := p.next()
		require.Equal(t, kindReady, m.Kind)
		require.ErrorIs(t, m.Err.err(), ErrProtocol)
		require.ErrorContains(t, m.Err.err(), "the server speaks protocol version 2, this worker 3")
	})
	t.Run("cnn batch, heartbeats, a bad job", func(t *testing.T) {
		t.Parallel()
		p := startRawPython(t, "tt-xla-resnet")
		p.send(&message{Kind: kindWarmup, Version: ProtocolVersion, Worker: "0", Heartbeat: millis(50 * time.Millisecond)})
		require.Equal(t, kindReady, p.next().Kind)
		red := image.NewRGBA(image.Rect(0, 0, 40, 30))
		for i := range red.Pix {
			red.Pix[i] = []byte{200, 30, 40, 255}[i%4]
		}
		j1, err := toWireJob(1, runners.Task{Request: &runners.CNNRequest{Image: red, TopK: 3, MinConfidence: 0}})
		require.NoError(t, err)
		j2, err := toWireJob(2, runners.Task{Request: &runners.CNNRequest{Image: red, TopK: 1}})
		require.NoError(t, err)
		bad := wireJob{ID: 3, CNN: &wireCNNRequest{Image: wireImage{Width: 2, Height: 2, Format: "bgr8"}}}
		p.send(&message{Kind: kindBatch, Jobs: []wireJob{j1, j2, bad}})
		got := map[uint64]*message{}
		for len(got) < 3 {
			m := p.next()
			require.Equal(t, kindResult, m.Kind)
			got[m.Job] = m
		}
		require.ErrorIs(t, got[3].Err.err(), ErrProtocol, "undecodable job answered at once")
		v1, err := got[1].Result.value()
		require.NoError(t, err)
		top := v1.(*runners.CNNResult).Top
		require.Len(t, top, 3)
		require.InDelta(t, 0.5, top[0].Probability, 0.5)
		v2, err := got[2].Result.value()
		require.NoError(t, err)
		require.Equal(t, top[0], v2.(*runners.CNNResult).Top[0], "deterministic")
	})
	t.Run("boxes and masks, from the picture", func(t *testing.T) {
		t.Parallel()
		two := func(left, right [3]byte) *image.RGBA {
			img := image.NewRGBA(image.Rect(0, 0, 40, 30))
			for i := range img.Pix {
				c := left
				if (i/4)%40 >= 20 {
					c = right
				}
				img.Pix[i] = append(c[:], 255)[i%4]
			}
			return img
		}
		pictures := []*image.RGBA{two([3]byte{200, 30, 40}, [3]byte{250, 250, 240}), two([3]byte{20, 90, 200}, [3]byte{120, 220, 10})}
		for _, tc := range []struct {
			runner string
			check  func(t *testing.T, r *runners.CNNResult)
		}{
			{"tt-yolov4", func(t *testing.T, r *runners.CNNResult) {
				require.NotEmpty(t, r.Detections)
				for i, d := range r.Detections {
					require.GreaterOrEqual(t, d.Score, 0.3, "YOLOv4's threshold")
					require.Less(t, d.Box[0], d.Box[2])
					require.LessOrEqual(t, d.Box[2], 1.0, "fractions of the image")
					require.NotEmpty(t, d.Label)
					if i > 0 {
						require.LessOrEqual(t, d.Score, r.Detections[i-1].Score, "best first")
					}
				}
			}},
			{"tt-xla-yolox-nano", func(t *testing.T, r *runners.CNNResult) {
				require.NotEmpty(t, r.Detections)
				require.Less(t, r.Detections[0].Box[0], r.Detections[0].Box[2])
				require.LessOrEqual(t, r.Detections[0].Box[2], 40.0, "pixels of the image")
			}},
			{"tt-xla-unet", func(t *testing.T, r *runners.CNNResult) {
				require.NotNil(t, r.Mask)
				require.Equal(t, []int{224, 224}, []int{r.Mask.Width, r.Mask.Height})
				require.Len(t, r.Mask.Class, 224*224)
				require.Len(t, r.Top, 2, "two colours, two classes")
				require.NotEqual(t, r.Mask.Class[0], r.Mask.Class[223], "left and right halves")
			}},
		} {
			t.Run(tc.runner, func(t *testing.T) {
				t.Parallel()
				p := startRawPython(t, tc.runner)
				p.send(&message{Kind: kindWarmup, Version: ProtocolVersion, Worker: "0", Heartbeat: millis(time.Second)})
				require.Equal(t, kindReady, p.next().Kind)
				var results []*runners.CNNResult
				for i, pic := range []*image.RGBA{pictures[0], pictures[1], pictures[0]} {
					j, err := toWireJob(uint64(i+1), runners.Task{Request: &runners.CNNRequest{Image: pic, TopK: 5}})
					require.NoError(t, err)
					p.send(&message{Kind: kindBatch, Jobs: []wireJob{j}})
					m := p.next()
					require.Equal(t, kindResult, m.Kind)
					require.Nil(t, m.Err)
					v, err := m.Result.value()
					require.NoError(t, err)
					tc.check(t, v.(*runners.CNNResult))
					results = append(results, v.(*runners.CNNResult))
				}
				require.Equal(t, results[0], results[2], "deterministic")
				require.NotEqual(t, results[0], results[1], "derived from the picture")
			})
		}
	})
	t.Run("streamed transcript waits for each ack", func(t *testing.T) {
		t.Parallel()
		p := startRawPython(t, "tt-whisper")
		p.send(&message{Kind: kindWarmup, Version: ProtocolVersion, Heartbeat: millis(time.Second)})
		require.Equal(t, kindReady, p.next().Kind)
		samples := make([]float32, 16000)
		for i := range samples {
			samples[i] = 0.25
		}
		j, err := toWireJob(7, runners.Task{Request: &runners.AudioRequest{Samples: samples, SampleRate: 16000, Duration: 1, Stream: true},
			Emit: func(runners.Chunk) error { return nil }})
		require.NoError(t, err)
		p.send(&message{Kind: kindBatch, Jobs: []wireJob{j}})
		var words []string
		for {
			m := p.next()
			if m.Kind == kindResult {
				v, err := m.Result.value()
				require.NoError(t, err)
				tr := v.(*runners.TranscriptionResult)
				require.Contains(t, tr.Text, "Python fake transcription of 1.00 seconds of audio")
				require.Equal(t, "transcribe", tr.Task)
				break
			}
			require.Equal(t, kindChunk, m.Kind)
			require.NotNil(t, m.Chunk)
			require.Equal(t, len(words)+1, m.Chunk.ChunkID)
			words = append(words, m.Chunk.Text)
			p.send(&message{Kind: kindChunkAck, Job: 7, Seq: m.Seq})
		}
		require.Greater(t, len(words), 5)
	})
}

// newPythonRunner is the parent side of a Python worker hosting runner.
func newPythonRunner(t *testing.T, runner string, extra ...string) *Runner {
	script, fakes := pythonWorker(t)
	r := New(Config{WorkerID: "0", Path: pythonExe, Args: []string{"-u", script, "0", runner},
		Env: pythonEnv(fakes, extra...), Heartbeat: 100 * time.Millisecond})
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, r.Warmup(ctx))
	return r
}

func TestPythonWorkerThroughTheRunner(t *testing.T) {
	t.Parallel()
	t.Run("inpainting keeps the picture outside the mask", func(t *testing.T) {
		t.Parallel()
		r := newPythonRunner(t, "tt-sdxl-edit")
		init := image.NewRGBA(image.Rect(0, 0, 64, 64))
		for i := range init.Pix {
			init.Pix[i] = []byte{10, 200, 30, 255}[i%4]
		}
		mask := image.NewGray(image.Rect(0, 0, 64, 64))
		for y := 0; y < 32; y++ { // top half repainted
			for x := 0; x < 64; x++ {
				mask.SetGray(x, y, color.Gray{Y: 255})
			}
		}
		seed := int64(5)
		var progress []int
		out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(),
			Request:  &runners.ImageRequest{Prompt: "p", Seed: &seed, NumInferenceSteps: 12, GuidanceScale: 5, InitImage: init, Mask: mask, Strength: 0.8},
			Progress: func(done, total int) { progress = append(progress, done) }}})
		require.NoError(t, out[0].Err)
		img := out[0].Value.(*runners.ImageResult).Images[0]
		require.Equal(t, image.Rect(0, 0, 1024, 1024), img.Bounds())
		require.Equal(t, color.RGBA{R: 10, G: 200, B: 30, A: 255}, color.RGBAModel.Convert(img.At(500, 900)), "outside the mask: the input")
		require.NotEqual(t, color.RGBA{R: 10, G: 200, B: 30, A: 255}, color.RGBAModel.Convert(img.At(500, 100)), "inside: repainted")
		require.Len(t, progress, 12)
	})
	t.Run("a cancelled job stops at the runner's next step", func(t *testing.T) {
		t.Parallel()
		r := newPythonRunner(t, "tt-sdxl-trace", "MOCK_STEP_SECONDS=0.2")
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		start := time.Now()
		out := r.Run(context.Background(), []runners.Task{{Ctx: ctx, Request: &runners.ImageRequest{Prompt: "p", NumInferenceSteps: 50, GuidanceScale: 5}}})
		require.ErrorIs(t, out[0].Err, context.Canceled)
		require.Less(t, time.Since(start), 5*time.Second, "not the job's 10 s")
	})
	t.Run("probe runs the runner's health_check", func(t *testing.T) {
		t.Parallel()
		probe := func(r *Runner) error { // the limit starts after the warm-up, which a loaded machine may take long for
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return r.Probe(ctx)
		}
		require.NoError(t, probe(newPythonRunner(t, "tt-xla-resnet")))
		err := probe(newPythonRunner(t, "tt-xla-resnet", "FAKE_RUNNER_HEALTH_FAIL=1"))
		require.ErrorContains(t, err, "ForgeResnetRunner.health_check() returned False")
	})
	t.Run("a bad request is ErrBadRequest", func(t *testing.T) {
		t.Parallel()
		r := newPythonRunner(t, "tt-sdxl-trace")
		out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(),
			Request: &runners.ImageRequest{Prompt: "p", NumInferenceSteps: 12, GuidanceScale: 5, Timesteps: []float64{1}, Sigmas: []float64{1}}}})
		require.ErrorIs(t, out[0].Err, runners.ErrBadRequest)
		require.ErrorContains(t, out[0].Err, "Only one of timesteps or sigmas")
	})
}
