package resnet

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPostprocess(t *testing.T) {
	cls, err := NewClassifier([]string{"a", "b", "c", "d", "e"})
	require.NoError(t, err)
	// Softmax of (2, 1, 0, 1, -1): e^2, e, 1, e, e^-1 over their sum.
	logits := []float32{2, 1, 0, 1, -1}
	var sum float64
	for _, z := range logits {
		sum += math.Exp(float64(z))
	}
	p := func(z float64) float64 { return math.Exp(z) / sum }
	tests := []struct {
		name    string
		topK    int
		minConf float64
		want    []int
	}{
		{"default top 3, ties by class order", 0, 0, []int{0, 1, 3}},
		{"top 1", 1, 0, []int{0}},
		{"top k above class count", 50, 0, []int{0, 1, 3, 2, 4}},
		{"min confidence drops the tail", 5, 10, []int{0, 1, 3}}, // p("c") is 7 %
		{"min confidence keeps top-1 always", 3, 99, []int{0}},
		{"classes at 19.15 % pass 19", 5, 19, []int{0, 1, 3}},
		{"classes at 19.15 % fail 20", 5, 20, []int{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cls.Postprocess(logits, tc.topK, tc.minConf)
			require.NoError(t, err)
			got := make([]int, len(res.Top))
			for i, c := range res.Top {
				got[i] = c.Index
				require.Equal(t, []string{"a", "b", "c", "d", "e"}[c.Index], c.Label)
				require.InDelta(t, p(float64(logits[c.Index])), c.Probability, 1e-12)
			}
			require.Equal(t, tc.want, got)
		})
	}
	t.Run("bad logits", func(t *testing.T) {
		for _, bad := range [][]float32{{1, 2}, {1, 2, 3, 4, float32(math.NaN())}, {1, 2, 3, 4, float32(math.Inf(1))}} {
			_, err := cls.Postprocess(bad, 3, 0)
			require.ErrorIs(t, err, ErrBadLogits)
		}
	})
	t.Run("large logits do not overflow", func(t *testing.T) {
		res, err := cls.Postprocess([]float32{1000, 999, -1000, 0, 0}, 2, 0)
		require.NoError(t, err)
		require.InDelta(t, 1/(1+math.Exp(-1)), res.Top[0].Probability, 1e-12)
	})
}

func TestPostprocessImageNetLabels(t *testing.T) {
	logits := make([]float32, NumClasses)
	logits[207] = 10 // golden retriever
	logits[1] = 9
	res, err := Postprocess(logits, 2, 0)
	require.NoError(t, err)
	require.Equal(t, "golden retriever", res.Top[0].Label)
	require.Equal(t, "goldfish", res.Top[1].Label)
	_, err = Postprocess(logits[:999], 2, 0)
	require.ErrorIs(t, err, ErrBadLogits)
}

func TestParseLabels(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
		wantErr  bool
	}{
		{"json list", `["tench", "goldfish"]`, []string{"tench", "goldfish"}, false},
		{"keras class index", `{"1": ["n01443537", "goldfish"], "0": ["n01440764", "tench"]}`, []string{"tench", "goldfish"}, false},
		{"text lines with CRLF", "tench\r\ngoldfish\r\n", []string{"tench", "goldfish"}, false},
		{"empty", "  \n", nil, true},
		{"blank label", "tench\n\ngoldfish\n", nil, true},
		{"class index with a gap", `{"0": ["n", "tench"], "2": ["n", "x"]}`, nil, true},
		{"bad json", `["tench",`, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLabels([]byte(tc.in))
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestGoldenLabelsMatchPackaged loads the pytorch/hub list from the golden data and compares
// it with the packaged torchvision list: equal except the two names torchvision disambiguates.
func TestGoldenLabelsMatchPackaged(t *testing.T) {
	dir := goldenDir(t)
	hub, err := LoadLabels(filepath.Join(dir, "imagenet_classes.json"))
	require.NoError(t, err)
	require.Len(t, hub, NumClasses)
	packaged := defaultClassifier.Labels()
	var differ []int
	for i := range hub {
		if hub[i] != packaged[i] {
			differ = append(differ, i)
		}
	}
	require.Equal(t, []int{134, 639}, differ)
	_, err = LoadLabels(filepath.Join(t.TempDir(), "missing.json"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestBF16(t *testing.T) {
	tests := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1.0
		{0xbf800000, 0xbf80}, // -1.0
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81}, // above tie
		{0x3f807fff, 0x3f80}, // below tie
		{0x7f7fffff, 0x7f80}, // max float32 rounds to +Inf, as torch does
		{0x7f800000, 0x7f80}, // +Inf
		{0xff800000, 0xff80}, // -Inf
		{0x00000001, 0x0000}, // smallest subnormal
		{0x7fc00000, 0x7fc0}, // quiet NaN
		{0x7f800001, 0x7fc0}, // signalling NaN with a low payload stays NaN
	}
	for _, tc := range tests {
		require.Equalf(t, tc.want, BF16(math.Float32frombits(tc.in)), "%#08x", tc.in)
	}
	src := []float32{0.5, -2.117904, 2.64, 3.14159}
	bf := ToBF16(nil, src)
	back := FromBF16(make([]float32, 0, 8), bf)
	for i := range src {
		require.InEpsilon(t, src[i], back[i], 1.0/256) // 8 significant bits
	}
	require.Empty(t, ToBF16(nil, nil))
}

func TestAssembleAndSplit(t *testing.T) {
	img := func(v float32) []float32 {
		x := make([]float32, ImageElems)
		for i := range x {
			x[i] = v
		}
		return x
	}
	dirty := make([]float32, 4*ImageElems)
	for i := range dirty {
		dirty[i] = 9
	}
	batch, err := AssembleBatch(dirty, [][]float32{img(1), img(2)}, 4)
	require.NoError(t, err)
	require.Len(t, batch, 4*ImageElems)
	require.Equal(t, float32(1), batch[ImageElems-1])
	require.Equal(t, float32(2), batch[ImageElems])
	for _, v := range batch[2*ImageElems:] {
		if v != 0 {
			t.Fatal("padding is not zero")
		}
	}
	_, err = AssembleBatch(nil, [][]float32{img(1), img(2)}, 1)
	require.Error(t, err)
	_, err = AssembleBatch(nil, [][]float32{{1, 2}}, 1)
	require.Error(t, err)

	per, err := SplitLogits([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 3, 2)
	require.NoError(t, err)
	require.Equal(t, [][]float32{{1, 2}, {3, 4}, {5, 6}}, per)
	per[0] = append(per[0], 99) // a view must not overwrite its neighbour
	require.Equal(t, []float32{3, 4}, per[1])
	_, err = SplitLogits([]float32{1, 2, 3}, 2, 2)
	require.ErrorIs(t, err, ErrBadLogits)
}
