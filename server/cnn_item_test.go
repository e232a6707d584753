package server

import (
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// A label classifier's item is HEAD's ForgeRunner._format_response: "json" keeps every
// probability as "xx.xxxx%"; "verbose_json" is the CSV line whose top-1 probability is that
// string and whose ranked probabilities are f"{p:.1f}" (no sign).
func TestCNNItemIsHEADsForgeFormat(t *testing.T) {
	res := &runners.CNNResult{Top: []runners.Classification{
		{Label: "tabby, tabby cat", Probability: 0.912345, Index: 281},
		{Label: "tiger cat", Probability: 0.05, Index: 282},
	}}
	tests := []struct {
		format string
		want   any
	}{
		{"verbose_json", `"tabby, tabby cat",91.2345%,"tabby, tabby cat",91.2,281,tiger cat,5.0,282`},
		{"json", gin.H{
			"top1_class_label":       "tabby, tabby cat",
			"top1_class_probability": "91.2345%",
			"output": gin.H{
				"labels":        []string{"tabby, tabby cat", "tiger cat"},
				"probabilities": []string{"91.2345%", "5.0000%"},
				"indices":       []int{281, 282},
			},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.format, func(t *testing.T) {
			require.Equal(t, tc.want, cnnItem(res, tc.format))
		})
	}
}
