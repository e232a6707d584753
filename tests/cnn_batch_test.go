package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/media/imaging"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/resnet"
)

// batchLine is the device worker's DEBUG record of one device batch (runners/resnet).
var batchLine = regexp.MustCompile(`resnet device batch\W+images=(\d+) padding=(\d+)`)

// TestCNNCrossRequestBatchingOnSimulator is the ResNet-50 must-show on the real binary: one
// worker process drives the C simulator (WORKER_ISOLATION=process, one chip); 64 concurrent
// requests with MAX_BATCH_SIZE=16 run as 4 device batches of 16 (counted from the worker's
// DEBUG log), and every caller gets the answer for its own image, computed here from that image
// alone with the simulator's Go twin.
func TestCNNCrossRequestBatchingOnSimulator(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{
		"MODEL_RUNNER":       "tt-xla-resnet",
		"WORKER_ISOLATION":   "process",
		"MOCK_DEVICES_COUNT": "1",
		"MAX_BATCH_SIZE":     "16",
		"MAX_BATCH_DELAY_MS": "2000", // generous: 16 concurrent uploads must arrive within it on a loaded machine
		"MOCK_CNN_SECONDS":   "0.001",
		"LOG_LEVEL":          "DEBUG",
	})

	const n = 64
	bodies := make([]string, n)
	want := make([]string, n)
	twin, err := resnet.NewFakeDevice(0)
	require.NoError(t, err)
	local, err := resnet.New(resnet.Config{BatchSize: twin.BatchSize(), Device: twin.Run})
	require.NoError(t, err)
	seen := map[string]bool{}
	for i := range n {
		data := encodePNG(t, drawPicture(96+i, 80+i%7, color.RGBA{uint8(40 * i), uint8(255 - 3*i), uint8(7 * i), 255}))
		bodies[i] = fmt.Sprintf(`{"prompt":"%s","top_k":3,"min_confidence":0}`, base64.StdEncoding.EncodeToString(data))
		img, _, err := imaging.DecodeRGB(data, 0)
		require.NoError(t, err)
		want[i] = expectedAnswer(t, local, img)
		seen[want[i]] = true
	}
	require.Len(t, seen, n, "every picture has its own answer, so a mix-up would show")

	got := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = classify(s.URL+cnnPath, bodies[i]) })
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "request %d", i)
		require.JSONEq(t, want[i], got[i], "request %d got another image's answer", i)
	}

	var batches []string
	for _, m := range batchLine.FindAllStringSubmatch(s.stderr.String(), -1) {
		batches = append(batches, m[1]+"+"+m[2])
	}
	require.Equal(t, []string{"16+0", "16+0", "16+0", "16+0", "16+0"}, batches,
		"warm-up, then 64 requests in 4 device batches of 16 (images+padding)")
}

// TestCNNHonoursEXIFOrientation: a JPEG tagged "rotate 90° clockwise" (EXIF orientation 6) is
// classified upright: its answer is that of the pixels rotated here by hand, not that of the
// stored pixels.
func TestCNNHonoursEXIFOrientation(t *testing.T) {
	t.Parallel()
	s := startServer(t, map[string]string{"MODEL_RUNNER": "tt-xla-resnet"})
	twin, err := resnet.NewFakeDevice(0)
	require.NoError(t, err)
	local, err := resnet.New(resnet.Config{BatchSize: twin.BatchSize(), Device: twin.Run})
	require.NoError(t, err)

	stored := encodeJPEG(t, drawPicture(160, 90, color.RGBA{200, 120, 10, 255}))
	// The server's decoder (libjpeg-turbo when it loads, else image/jpeg), as the server does.
	rgb, _, err := imaging.DecodeRGB(stored, 0)
	require.NoError(t, err)
	w, h := rgb.Bounds().Dx(), rgb.Bounds().Dy()
	upright := image.NewNRGBA(image.Rect(0, 0, h, w))
	for y := range w {
		for x := range h {
			upright.SetNRGBA(x, y, rgb.NRGBAAt(y, h-1-x)) // displayed (x, y) = stored (y, h-1-x)
		}
	}
	// APP1 Exif, little-endian TIFF, IFD0 = {Orientation (0x0112), SHORT, 1, 6}, inserted after SOI.
	tiff := []byte{'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0}
	payload := append([]byte("Exif\x00\x00"), tiff...)
	app1 := append([]byte{0xFF, 0xE1, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)}, payload...)
	tagged := append(append(append([]byte(nil), stored[:2]...), app1...), stored[2:]...)

	body := func(data []byte) string {
		return fmt.Sprintf(`{"prompt":"%s","top_k":3,"min_confidence":0}`, base64.StdEncoding.EncodeToString(data))
	}
	got, err := classify(s.URL+cnnPath, body(tagged))
	require.NoError(t, err)
	require.JSONEq(t, expectedAnswer(t, local, upright), got, "classified upright")
	plain, err := classify(s.URL+cnnPath, body(stored))
	require.NoError(t, err)
	require.JSONEq(t, expectedAnswer(t, local, rgb), plain, "without the tag: the stored pixels")
	require.NotEqual(t, plain, got)
}

// expectedAnswer is the server's JSON answer for img, computed in this process.
func expectedAnswer(t *testing.T, r *resnet.Runner, img image.Image) string {
	t.Helper()
	out := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(),
		Request: &runners.CNNRequest{Image: img, TopK: 3, MinConfidence: 0}}})
	require.NoError(t, out[0].Err)
	res := out[0].Value.(*runners.CNNResult)
	pct := func(p float64) string { return strconv.FormatFloat(p*100, 'f', 4, 64) + "%" }
	labels, probs, idx := []string{}, []string{}, []int{}
	for _, c := range res.Top {
		labels, probs, idx = append(labels, c.Label), append(probs, pct(c.Probability)), append(idx, c.Index)
	}
	b, err := json.Marshal(map[string]any{"status": "success", "image_data": []any{map[string]any{
		"top1_class_label": res.Top[0].Label, "top1_class_probability": pct(res.Top[0].Probability),
		"output": map[string]any{"labels": labels, "probabilities": probs, "indices": idx}}}})
	require.NoError(t, err)
	return string(b)
}

// classify posts one JSON classification request; safe for concurrent use (no testing.T).
func classify(url, body string) (string, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", bearer)
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return string(b), nil
}
