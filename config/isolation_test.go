package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWorkerIsolation(t *testing.T) {
	tests := []struct {
		name  string
		value *string
		mock  bool
		want  string
		err   string
	}{
		{name: "hardware default", mock: false, want: IsolationProcess},
		{name: "mock default", mock: true, want: IsolationInProcess},
		{name: "explicit process in mock mode", value: ptr("process"), mock: true, want: IsolationProcess},
		{name: "explicit inprocess on hardware", value: ptr(" InProcess "), mock: false, want: IsolationInProcess},
		{name: "unknown", value: ptr("thread"), mock: true, err: `invalid setting WORKER_ISOLATION="thread": accepted: process, inprocess`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := env{}
			if tt.value != nil {
				e["WORKER_ISOLATION"] = *tt.value
			}
			if tt.err != "" {
				err := loadErr(t, e, tt.mock)
				require.ErrorIs(t, err, ErrInvalid)
				require.EqualError(t, err, tt.err)
				return
			}
			s := load(t, e, tt.mock)
			require.Equal(t, tt.want, s.WorkerIsolation)
			require.Equal(t, tt.want, s.Redacted()["WORKER_ISOLATION"])
		})
	}
}

func ptr(s string) *string { return &s }
