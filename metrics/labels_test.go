package metrics

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStatusLabels(t *testing.T) {
	tests := []struct {
		code          int
		status, class string
	}{
		{100, "100", "1xx"}, {200, "200", "2xx"}, {204, "204", "2xx"}, {429, "429", "4xx"}, {499, "499", "4xx"},
		{503, "503", "5xx"}, {599, "599", "5xx"}, {0, "0", "0xx"}, {99, "99", "0xx"}, {600, "600", "6xx"}, {-1, "-1", "0xx"},
	}
	for _, tc := range tests {
		t.Run(strconv.Itoa(tc.code), func(t *testing.T) {
			require.Equal(t, tc.status, statusLabel(tc.code))
			require.Equal(t, tc.class, classLabel(tc.code))
		})
	}
	for code := 100; code < 600; code++ {
		require.Equal(t, strconv.Itoa(code), statusLabel(code))
		require.Equal(t, strconv.Itoa(code/100)+"xx", classLabel(code))
	}
}
