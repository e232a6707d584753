package bench

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckTarget(t *testing.T) {
	tests := []struct {
		url         string
		allowRemote bool
		wantErr     error
	}{
		{url: "http://127.0.0.1:8000", wantErr: nil},
		{url: "http://127.3.4.5", wantErr: nil},
		{url: "http://[::1]:8000/", wantErr: nil},
		{url: "http://localhost:8000", wantErr: nil},
		{url: "https://LOCALHOST.", wantErr: nil},
		{url: "http://api.localhost:80", wantErr: nil},
		{url: "http://10.0.0.1:8000", wantErr: ErrRemoteTarget},
		{url: "http://0.0.0.0:8000", wantErr: ErrRemoteTarget},
		{url: "http://example.com", wantErr: ErrRemoteTarget},
		{url: "http://localhost.example.com", wantErr: ErrRemoteTarget},
		{url: "http://example.com", allowRemote: true, wantErr: nil},
		{url: "ftp://127.0.0.1", wantErr: ErrConfig},
		{url: "127.0.0.1:8000", wantErr: ErrConfig},
		{url: "http://", wantErr: ErrConfig},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			u, err := CheckTarget(tc.url, tc.allowRemote)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, u)
		})
	}
}
