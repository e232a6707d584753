// Package wangolden reads, for runners/wan's tests, the Wan2.2 goldens that
// scripts/ensure-wan-goldens.sh generates from diffusers into $TT_GOLDEN_DIR/wan (never into
// the repository): one loader for the sampler's, the T2V pipeline's and the I2V pipeline's
// JSON files, their float32 bit patterns, and the inputs beside them.
package wangolden

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"testing"

	"github.com/tenstorrent/tt-media-server-go/internal/shareddata"
)

// Hint says how to make the goldens (shown when they are absent).
const Hint = "run scripts/ensure-wan-goldens.sh (needs ../shared/diffusers-58eb52c, Debian python3-torch, python3-pil and python3-sentencepiece)"

// Path is the golden file name (unipc.json, pipeline.json, i2v.json, umt5_test.model,
// i2v_a.png, ...): t is skipped when it is absent, or fails under CI=true.
func Path(t testing.TB, name string) string {
	t.Helper()
	return shareddata.GeneratedFile(t, "wan", name, Hint)
}

// Read decodes the JSON golden name into v.
func Read(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(Path(t, name))
	if err != nil {
		t.Fatal(fmt.Errorf("wan golden %s: %w", name, err))
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(fmt.Errorf("wan golden %s: %w", name, err))
	}
}

// Load decodes the JSON golden name as a T; an empty one (the zero T) fails t.
func Load[T any](t testing.TB, name string) T {
	t.Helper()
	var v T
	Read(t, name, &v)
	if reflect.ValueOf(&v).Elem().IsZero() {
		t.Fatalf("wan golden %s is empty: %s", name, Hint)
	}
	return v
}

// Floats are float32 values from their IEEE bit patterns (the goldens store bits: exact, and
// JSON has no inf or NaN).
func Floats(bits []uint32) []float32 {
	out := make([]float32, len(bits))
	for i, b := range bits {
		out[i] = math.Float32frombits(b)
	}
	return out
}
