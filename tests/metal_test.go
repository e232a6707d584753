//go:build cgo && ttnn

package tests

import (
	"context"
	"encoding/base64"
	"image/color"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/runners/wan/wangolden"
	"github.com/tenstorrent/tt-media-server-go/tests/e2e"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
	"github.com/tenstorrent/tt-media-server-go/ttnn/ttnnfile"
)

// The real binary, built with -tags ttnn and linked against the fake tt::runtime
// (scripts/check-metal.sh passes it in TT_MEDIA_SERVER_E2E_BINARY), serving ResNet-50 with
// DEVICE_BACKEND=metal from .ttnn files written from the program's declaration.
func TestMetalResNetBinary(t *testing.T) {
	if os.Getenv(e2e.BinaryEnv) == "" {
		t.Skip("needs a -tags ttnn server binary in " + e2e.BinaryEnv + " (scripts/check-metal.sh builds one)")
	}
	require.NoError(t, ttnnfile.Available(ttnnfile.SDKDir()))
	write := func(mod func(*ttnn.ProgramSpec)) string {
		dir := t.TempDir()
		f := ttnnfile.Fixture{Traced: func(string) bool { return true }}
		if mod != nil {
			f.Mod = func(_ string, s *ttnn.ProgramSpec) { mod(s) }
		}
		require.NoError(t, ttnnfile.WriteDeclared(context.Background(), ttnnfile.SDKDir(), dir, []string{"resnet50"}, programs.Lookup, f))
		return dir
	}
	env := func(weights string) map[string]string {
		return map[string]string{"DEVICE_BACKEND": "metal", "MODEL_RUNNER": "tt-xla-resnet", "MODEL_WEIGHTS_PATH": weights,
			"DEVICE_IDS": "(0)", "MOCK_DEVICES_COUNT": "1"}
	}

	t.Run("a program that differs from its declaration stops the worker's start-up", func(t *testing.T) {
		s := launch(t, env(write(func(p *ttnn.ProgramSpec) { p.Functions[0].Inputs[0].Shape[0] = 8 })))
		metalStartupFails(t, s, "program resnet50 (",
			"function forward: input 0 (pixel_values): shape [8,3,224,224] in the file, [16,3,224,224] declared")
	})

	t.Run("the declared program warms up and serves", func(t *testing.T) {
		s := startServer(t, env(write(nil)))
		metalReady(t, s, 20*time.Second)
		img := base64.StdEncoding.EncodeToString(encodePNG(t, drawPicture(96, 96, color.RGBA{200, 40, 40, 255})))
		r := s.postJSON(t, cnnPath, `{"prompt":"`+img+`","top_k":3,"min_confidence":0}`)
		require.Equal(t, 200, r.Status, string(r.Body))
		obj := r.obj(t)
		data := obj["image_data"].([]any)[0].(map[string]any)
		labels := data["output"].(map[string]any)["labels"].([]any)
		require.Len(t, labels, 3)
		t.Logf("served by the metal backend over the fake runtime (the fake's logits): %s", r.Body)
		again := s.postJSON(t, cnnPath, `{"prompt":"`+img+`","top_k":3,"min_confidence":0}`)
		require.Equal(t, string(r.Body), string(again.Body), "the same image, the same answer")
	})
}

// metalStartupFails waits for a worker's configuration error (a program that differs from its
// declaration: one line, not retried), checks that the output names each of wants, that the
// worker is not alive, and that the server stops cleanly; it returns the output.
func metalStartupFails(t *testing.T, s *server, wants ...string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(s.stderr.String(), "configuration error, not retried") {
		require.True(t, time.Now().Before(deadline), "no configuration error in:\n%s", s.stderr.String())
		time.Sleep(50 * time.Millisecond)
	}
	out := s.stderr.String()
	for _, w := range wants {
		require.Contains(t, out, w)
	}
	require.Equal(t, 1, strings.Count(out, "worker warm-up failed"), "not retried")
	status, body := s.liveness(t)
	require.Equal(t, 503, status, "a failed worker: not alive")
	require.Equal(t, false, body["model_ready"])
	s.sigterm(t)
	require.Zero(t, s.waitExit(t, 10*time.Second))
	return out
}

// metalReady waits until /tt-liveness reports the model ready (the metal warm-up ran).
func metalReady(t *testing.T, s *server, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, body := s.liveness(t)
		if body["model_ready"] == true {
			return
		}
		require.False(t, s.exited(), "server exited:\n%s", s.stderr.String())
		require.True(t, time.Now().Before(deadline), "not ready:\n%s", s.stderr.String())
		time.Sleep(50 * time.Millisecond)
	}
}

// writeMetalImageWeights makes a MODEL_WEIGHTS_PATH for a diffusion runner on metal: the real
// CLIP vocabulary (../shared/testdata/clip) and one .ttnn file per program, written from its
// declaration (mod may change one), the denoiser traced as tt-mlir's trace pass makes it.
func writeMetalImageWeights(t *testing.T, runner string, mod func(name string, spec *ttnn.ProgramSpec)) string {
	t.Helper()
	bpe := filepath.Join(repoRoot, "..", "shared", "testdata", "clip", "bpe_simple_vocab_16e6.txt.gz")
	_, err := os.Stat(bpe)
	require.NoError(t, err, "the real CLIP vocabulary (../shared/testdata/clip) is needed")
	dir := t.TempDir()
	require.NoError(t, os.Symlink(bpe, filepath.Join(dir, "bpe_simple_vocab_16e6.txt.gz")))
	model, ok := runners.Lookup(runner, nil)
	require.True(t, ok)
	var names []string
	for _, p := range model.Programs {
		if !p.SimOnly { // the simulator's LoRA stand-in has no .ttnn on metal
			names = append(names, p.Name)
		}
	}
	require.NoError(t, ttnnfile.WriteDeclared(context.Background(), ttnnfile.SDKDir(), dir, names, programs.Lookup, ttnnfile.Fixture{
		Traced: func(name string) bool { return name == "sdxl-unet" || name == "sd35-transformer" }, Mod: mod}))
	return dir
}

// The real binary (-tags ttnn, over the fake tt::runtime) serving SDXL and SD3.5 with
// DEVICE_BACKEND=metal: the host pipeline (tokenizer, scheduler, guidance, VAE postprocess)
// over .ttnn programs written from their declarations. The images are the fake's outputs run
// through the real pipeline, not a model's.
func TestMetalImageBinary(t *testing.T) {
	if os.Getenv(e2e.BinaryEnv) == "" {
		t.Skip("needs a -tags ttnn server binary in " + e2e.BinaryEnv + " (scripts/check-metal.sh builds one)")
	}
	require.NoError(t, ttnnfile.Available(ttnnfile.SDKDir()))
	env := func(runner, weights string) map[string]string {
		e := map[string]string{"DEVICE_BACKEND": "metal", "MODEL_RUNNER": runner, "MODEL_WEIGHTS_PATH": weights,
			"DEVICE_IDS": "(0)", "MOCK_DEVICES_COUNT": "1", "DEFAULT_INFERENCE_TIMEOUT_SECONDS": "120"}
		if runner == "tt-sd3.5" { // its programs are declared for a T3K's 2x4 mesh
			e["DEVICE_IDS"], e["DEVICE_MESH_SHAPE"], e["MOCK_DEVICES_COUNT"] = "(0,1,2,3,4,5,6,7)", "(2,4)", "8"
		}
		return e
	}

	t.Run("a program that differs from its declaration stops the worker's start-up", func(t *testing.T) {
		s := launch(t, env("tt-sdxl-trace", writeMetalImageWeights(t, "tt-sdxl-trace", func(name string, p *ttnn.ProgramSpec) {
			if name == "sdxl-vae" {
				p.Functions[0].Outputs[0].Shape[2], p.Functions[0].Outputs[0].Shape[3] = 512, 512
			}
		})))
		out := metalStartupFails(t, s, "program does not match its declaration: program sdxl-vae (",
			"function decode: output 0 (image): shape [1,3,512,512] in the file, [1,3,1024,1024] declared")
		require.NotContains(t, out, "using the simulated image runner", "metal never falls back to the simulator")
	})

	for _, runner := range []string{"tt-sdxl-trace", "tt-sd3.5"} {
		t.Run(runner+" warms up and serves /v1/images/generations on metal", func(t *testing.T) {
			s := launch(t, env(runner, writeMetalImageWeights(t, runner, nil)))
			t.Cleanup(func() { s.stopAndCheck(t) })
			s.waitReady(t, 90*time.Second)
			metalReady(t, s, 30*time.Second)
			require.Contains(t, s.stderr.String(), "real pipeline on the metal backend")
			require.NotContains(t, s.stderr.String(), "weights_checksum", "no simulator LoRA bookkeeping on metal")
			// The worker process's lines arrive quoted inside the server's (msg=\"...\").
			require.Regexp(t, `diffusion runner warm\\?"? runner=`+regexp.QuoteMeta(runner)+` .*backend=metal`, s.stderr.String())
			imgs := generateV1(t, s, `{"prompt": "a red door", "seed": 1, "n": 1, "size": "1024x1024", "num_inference_steps": 12}`)
			require.Len(t, imgs, 1)
			requireImage(t, imgs[0], 1024)
			done := regexp.MustCompile(`diffusion runner: image done\\?"? runner=` + regexp.QuoteMeta(runner) +
				` text_encodes=1 vae_encodes=0 unet_steps=12 vae_decodes=1 lora_fuse_runs=0 weight_restores=0 strength=0 backend=metal`)
			require.Len(t, done.FindAllString(s.stderr.String(), -1), 1,
				"one request: the encoders once, 12 denoiser runs, the VAE once, on metal:\n%s", s.stderr.String())
			again := generateV1(t, s, `{"prompt": "a red door", "seed": 1, "n": 1, "size": "1024x1024", "num_inference_steps": 12}`)
			require.Equal(t, imgs, again, "the same request, the same image")
			require.Len(t, done.FindAllString(s.stderr.String(), -1), 2)
			if runner == "tt-sdxl-trace" {
				r := s.postJSON(t, "/v1/images/generations", `{"prompt": "a red door", "lora_path": "style.safetensors"}`)
				require.Equal(t, 400, r.Status, "%s", r)
				require.Contains(t, string(r.Body), "lora_path is not supported on DEVICE_BACKEND=metal")
			}
		})
	}
}

// The real binary (-tags ttnn, over the fake tt::runtime) serving Whisper with
// DEVICE_BACKEND=metal: MODEL_WEIGHTS_PATH holds the vocabulary of ../shared/testdata/whisper
// and whisper-encoder.ttnn and whisper-decoder-step.ttnn written from their declarations.
// The host pipeline (log-mel, openai/whisper's decoding loop, tokenizer, timestamps) is the
// real one; the logits are the fake's, so the text is whatever they decode to.
func TestMetalWhisperBinary(t *testing.T) {
	if os.Getenv(e2e.BinaryEnv) == "" {
		t.Skip("needs a -tags ttnn server binary in " + e2e.BinaryEnv + " (scripts/check-metal.sh builds one)")
	}
	require.NoError(t, ttnnfile.Available(ttnnfile.SDKDir()))
	vocab := filepath.Join(testdataDir(t, "whisper"), "multilingual.tiktoken")
	_, err := os.Stat(vocab)
	require.NoError(t, err, "the whisper vocabulary (../shared/testdata/whisper)")
	write := func(mod func(*ttnn.ProgramSpec)) string {
		dir := t.TempDir()
		require.NoError(t, os.Symlink(vocab, filepath.Join(dir, "multilingual.tiktoken")))
		for _, name := range []string{"whisper-encoder", "whisper-decoder-step"} {
			spec, ok := programs.Lookup(name) // a copy: mod may change it
			require.True(t, ok)
			if mod != nil && name == "whisper-decoder-step" {
				mod(&spec)
			}
			progs := ttnnfile.FromSpec(spec)
			progs[0].Traced, progs[0].Ops = true, 8
			require.NoError(t, ttnnfile.Write(context.Background(), ttnnfile.SDKDir(), programs.MetalPath(dir, name), progs))
		}
		return dir
	}
	env := func(weights string) map[string]string {
		return map[string]string{"DEVICE_BACKEND": "metal", "MODEL_RUNNER": "tt-whisper", "MODEL_WEIGHTS_PATH": weights,
			"DEVICE_IDS": "(0)", "MOCK_DEVICES_COUNT": "1", "DEFAULT_INFERENCE_TIMEOUT_SECONDS": "180"}
	}

	t.Run("a decoder step that differs from its declaration stops the worker's start-up", func(t *testing.T) {
		s := launch(t, env(write(func(p *ttnn.ProgramSpec) { p.Functions[0].Outputs[0].Shape[2] = 51865 })))
		out := metalStartupFails(t, s, "program whisper-decoder-step (",
			"function step: output 0 (logits): shape [1,1,51865] in the file, [1,1,51866] declared")
		require.NotContains(t, out, "simulated", "no fall-back to the simulated runner")
	})

	t.Run("the declared programs warm up and serve /v1/audio/transcriptions", func(t *testing.T) {
		s := startServer(t, env(write(nil)))
		// The warm-up decodes a second of silence with the default temperature schedule: the
		// fake's flat logits fail every threshold, so six passes of up to 224 tokens.
		metalReady(t, s, 120*time.Second)
		require.Regexp(t, `whisper runner ready.*backend=metal`, s.stderr.String(), "the real runner on the metal backend")
		wav := wavPCM16(16000, tone(16000, 2, 220, 0.3))
		// HEAD's dialect: temperatures 0.0 by default (one greedy pass per window).
		transcribe := func() map[string]any {
			r := s.postMultipart(t, "/v1/audio/transcriptions", file("speech.wav", "audio/wav", wav),
				field("response_format", "verbose_json"), field("is_preprocessing_enabled", "false"))
			require.Equalf(t, 200, r.Status, "%s", r)
			return r.obj(t)
		}
		res := transcribe()
		require.IsType(t, "", res["text"])
		require.InDelta(t, 2.0, jsonNumber(t, res["duration"], "duration"), 1e-3)
		require.NotEmpty(t, res["language"], "a language detected from the fake's logits")
		segs, ok := res["segments"].([]any)
		require.True(t, ok, "segments: %v", res["segments"])
		var texts []string
		for i, sv := range segs {
			seg, ok := sv.(map[string]any)
			require.True(t, ok, "segment %d: %v", i, sv)
			require.Equal(t, float64(i), jsonNumber(t, seg["id"], "id"))
			start, end := jsonNumber(t, seg["start_time"], "start_time"), jsonNumber(t, seg["end_time"], "end_time")
			require.LessOrEqual(t, start, end, "segment %d", i)
			require.LessOrEqual(t, end, 30.0, "segment %d inside the one window", i)
			text, ok := seg["text"].(string)
			require.True(t, ok, "segment %d text: %v", i, seg["text"])
			texts = append(texts, text)
		}
		require.Equal(t, strings.Join(texts, " "), res["text"], "the text is the segments' texts")
		t.Logf("served on metal over the fake runtime (the fake's logits, not a model's): %v", res)
		require.Equal(t, res, transcribe(), "the fake's logits are a hash of the inputs: the same audio, the same answer")
	})
}

// The real binary (-tags ttnn, over the fake tt::runtime) with tt-wan2.2 on DEVICE_BACKEND=metal
// on a T3K group: MODEL_WEIGHTS_PATH holds the UMT5 tokenizer (the goldens' test model) and the
// four wan22-t2v-*.ttnn programs written from their declarations, one of them changed, and the
// worker's start-up stops with one line naming the program, the tensor and the difference. (A
// clip at the declared 832x480 is not run here: the fake fills outputs on the host, 97M values
// per VAE output and chip; runners/wan's and runners/wan/t2v's metal tests run clips at a tiny
// size of the same programs.)
func TestMetalWanBinary(t *testing.T) {
	if os.Getenv(e2e.BinaryEnv) == "" {
		t.Skip("needs a -tags ttnn server binary in " + e2e.BinaryEnv + " (scripts/check-metal.sh builds one)")
	}
	needFFmpeg(t)
	require.NoError(t, ttnnfile.Available(ttnnfile.SDKDir()))
	tok := wangolden.Path(t, "umt5_test.model")
	dir, work := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tokenizer"), 0o755))
	require.NoError(t, os.Symlink(tok, filepath.Join(dir, "tokenizer", "spiece.model")))
	require.NoError(t, ttnnfile.WriteDeclared(context.Background(), ttnnfile.SDKDir(), dir,
		[]string{"wan22-t2v-text-encoder", "wan22-t2v-transformer", "wan22-t2v-transformer-2", "wan22-t2v-vae"}, programs.Lookup,
		ttnnfile.Fixture{Traced: func(name string) bool { return strings.Contains(name, "-transformer") },
			Mod: func(name string, p *ttnn.ProgramSpec) {
				if name == "wan22-t2v-transformer" {
					p.Functions[0].Inputs[2].Shape[2] = 2048
				}
			}}))
	s := launch(t, videoServerEnv(work, map[string]string{"DEVICE_BACKEND": "metal", "MODEL_WEIGHTS_PATH": dir,
		"DEVICE_IDS": "(0,1,2,3,4,5,6,7)", "DEVICE_MESH_SHAPE": "(2,4)", "MOCK_DEVICES_COUNT": "8"}))
	out := metalStartupFails(t, s, "program does not match its declaration: program wan22-t2v-transformer (",
		"function forward: input 2 (encoder_hidden_states): shape [1,512,2048] in the file, [1,512,4096] declared")
	require.Contains(t, out, "Wan2.2 T2V pipeline on the metal backend")
	require.NotContains(t, out, "using the simulated video runner", "metal never falls back to the simulator")
}
