package audioenc

import (
	"fmt"
	"io"
)

// seekBuffer is an in-memory io.WriteSeeker: the encoders of whole files (go-audio/wav in
// WAVFile, mewkiz/flac) seek back to write sizes they know only at the end. It is the one copy
// in the module (internal/wavtest writes through WAVFile); the small modules that offer one
// (orcaman/writerseeker and its forks) cannot be had as dependencies here.
type seekBuffer struct {
	buf []byte
	pos int
}

func (b *seekBuffer) Write(p []byte) (int, error) {
	if end := b.pos + len(p); end > len(b.buf) {
		b.buf = append(b.buf, make([]byte, end-len(b.buf))...)
	}
	b.pos += copy(b.buf[b.pos:], p)
	return len(p), nil
}

func (b *seekBuffer) Seek(off int64, whence int) (int64, error) {
	var base int64
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = int64(b.pos)
	case io.SeekEnd:
		base = int64(len(b.buf))
	default:
		return 0, fmt.Errorf("seek: whence %d", whence)
	}
	if base+off < 0 {
		return 0, fmt.Errorf("seek: negative position %d", base+off)
	}
	b.pos = int(base + off)
	return int64(b.pos), nil
}
