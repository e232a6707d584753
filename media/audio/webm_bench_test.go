package audio

import "testing"

// BenchmarkWalkWebM: one validating walk of the Chrome-like fixture (162 packets), to compare
// with at-wat/ebml-go's Unmarshal of the same file (docs/AUDIO.md).
func BenchmarkWalkWebM(b *testing.B) {
	data := readBrowserFixture(b, "webm_opus_48k_mono_32k.webm")
	for b.Loop() {
		if _, err := walkWebM(data, nil, func(webmPacket) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
