package nativelib

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLib(t *testing.T) {
	for _, tc := range []struct {
		name     string
		open     func(string) error
		native   bool
		describe string
		tried    int
	}{
		{"second name loads", func(n string) error {
			if n == "b.so" {
				return nil
			}
			return errors.New(n + ": no such file")
		}, true, "libx (b.so)", 2},
		{"none loads", func(n string) error { return errors.New(n + ": no such file") }, false,
			"pure Go (twin; libx not loaded: a.so: no such file\nb.so: no such file\nc.so: no such file)", 3},
		{"not built", func(string) error { return ErrNotBuilt }, false, "pure Go (twin; built without cgo or with the nonative tag)", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tried := 0
			l := &Lib{What: "libx", Names: []string{"a.so", "b.so", "c.so"}, Open: func(n string) error { tried++; return tc.open(n) }}
			require.Equal(t, tc.native, l.Native())
			require.Equal(t, tc.describe, l.Describe("twin"))
			_ = l.Load()
			require.Equal(t, tc.tried, tried, "opened once")
			l.SetEnabled(false)
			require.False(t, l.Native())
			require.Equal(t, "pure Go (twin; native codecs switched off)", l.Describe("twin"))
			l.SetEnabled(true)
			require.Equal(t, tc.native, l.Native())
		})
	}
}
