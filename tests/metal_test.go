//go:build cgo && ttnn

package tests

import (
	"context"
	"encoding/base64"
	"image/color"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners/programs"
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
		spec, ok := programs.Lookup("resnet50") // a copy: mod may change it
		require.True(t, ok)
		if mod != nil {
			mod(&spec)
		}
		dir := t.TempDir()
		progs := ttnnfile.FromSpec(spec)
		progs[0].Traced, progs[0].Ops = true, 4
		require.NoError(t, ttnnfile.Write(context.Background(), ttnnfile.SDKDir(), programs.MetalPath(dir, "resnet50"), progs))
		return dir
	}
	env := func(weights string) map[string]string {
		return map[string]string{"DEVICE_BACKEND": "metal", "MODEL_RUNNER": "tt-xla-resnet", "MODEL_WEIGHTS_PATH": weights,
			"DEVICE_IDS": "(0)", "MOCK_DEVICES_COUNT": "1"}
	}

	t.Run("a program that differs from its declaration stops the worker's start-up", func(t *testing.T) {
		s := launch(t, env(write(func(p *ttnn.ProgramSpec) { p.Functions[0].Inputs[0].Shape[0] = 8 })))
		want := "program resnet50 ("
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(s.stderr.String(), "configuration error, not retried") {
			require.True(t, time.Now().Before(deadline), "no configuration error in:\n%s", s.stderr.String())
			time.Sleep(50 * time.Millisecond)
		}
		out := s.stderr.String()
		require.Contains(t, out, want)
		require.Contains(t, out, "function forward: input 0 (pixel_values): shape [8,3,224,224] in the file, [16,3,224,224] declared")
		require.Equal(t, 1, strings.Count(out, "worker warm-up failed"), "not retried")
		status, body := s.liveness(t)
		require.Equal(t, 503, status, "a failed worker: not alive")
		require.Equal(t, false, body["model_ready"])
		s.sigterm(t)
		require.Zero(t, s.waitExit(t, 10*time.Second))
	})

	t.Run("the declared program warms up and serves", func(t *testing.T) {
		s := startServer(t, env(write(nil)))
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, body := s.liveness(t)
			if body["model_ready"] == true {
				break
			}
			require.True(t, time.Now().Before(deadline), "not ready:\n%s", s.stderr.String())
			time.Sleep(50 * time.Millisecond)
		}
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
