package audio

// EBML, the binary container under Matroska and WebM: an element is an ID and a length, each a
// variable-length integer, then its data. The reader below bounds every element by its parent
// and by the real input; webm.go reads Matroska's elements with it.

import "fmt"

// ebmlElem is one element: its ID, where its data starts and ends.
type ebmlElem struct {
	id         uint32
	off        int // offset of the ID
	data, end  int
	unknownLen bool
}

// readEBMLElem reads the element header at off, within [off, limit).
func readEBMLElem(data []byte, off, limit int) (ebmlElem, error) {
	e := ebmlElem{off: off}
	if off >= limit {
		return e, fmt.Errorf("%w: WebM file is truncated: an element header is missing at byte %d", ErrInvalidAudio, off)
	}
	b := data[off]
	n := 1
	for n <= 4 && b&(0x80>>(n-1)) == 0 {
		n++
	}
	if n > 4 {
		return e, fmt.Errorf("%w: WebM data is damaged: invalid element ID at byte %d", ErrInvalidAudio, off)
	}
	if off+n > limit {
		return e, fmt.Errorf("%w: WebM file is truncated inside an element ID at byte %d", ErrInvalidAudio, off)
	}
	for i := 0; i < n; i++ {
		e.id = e.id<<8 | uint32(data[off+i])
	}
	size, sl, unknown, ok := readEBMLVint(data[off+n : limit])
	if !ok {
		return e, fmt.Errorf("%w: WebM data is damaged or truncated: invalid size of element 0x%X at byte %d", ErrInvalidAudio, e.id, off)
	}
	e.data = off + n + sl
	e.unknownLen = unknown
	if unknown {
		e.end = limit
		return e, nil
	}
	if size > uint64(limit-e.data) {
		return e, fmt.Errorf("%w: WebM file is truncated or damaged: element 0x%X at byte %d claims %d bytes; %d remain",
			ErrInvalidAudio, e.id, off, size, limit-e.data)
	}
	e.end = e.data + int(size)
	return e, nil
}

// readEBMLVint reads a variable-size integer (marker bit removed); unknown reports the
// all-ones "unknown size" value.
func readEBMLVint(b []byte) (v uint64, n int, unknown, ok bool) {
	if len(b) == 0 || b[0] == 0 {
		return 0, 0, false, false
	}
	n = 1
	for b[0]&(0x80>>(n-1)) == 0 {
		n++
	}
	if n > len(b) {
		return 0, 0, false, false
	}
	v = uint64(b[0]) & (0xff >> n)
	for i := 1; i < n; i++ {
		v = v<<8 | uint64(b[i])
	}
	return v, n, v == 1<<(7*n)-1, true
}

func ebmlUint(data []byte, e ebmlElem) (uint64, error) {
	if e.end-e.data > 8 {
		return 0, fmt.Errorf("%w: WebM integer element 0x%X at byte %d is %d bytes long", ErrInvalidAudio, e.id, e.off, e.end-e.data)
	}
	var v uint64
	for _, c := range data[e.data:e.end] {
		v = v<<8 | uint64(c)
	}
	return v, nil
}

func ebmlInt(data []byte, e ebmlElem) (int64, error) {
	u, err := ebmlUint(data, e)
	if err != nil || e.end == e.data {
		return 0, err
	}
	shift := 64 - 8*uint(e.end-e.data)
	return int64(u<<shift) >> shift, nil
}

// ebmlChildren calls fn for each child of a master element of known size.
func ebmlChildren(data []byte, parent ebmlElem, fn func(ebmlElem) error) error {
	for off := parent.data; off < parent.end; {
		c, err := readEBMLElem(data, off, parent.end)
		if err != nil {
			return err
		}
		if c.unknownLen {
			return fmt.Errorf("%w: WebM element 0x%X at byte %d has an unknown size inside 0x%X", ErrInvalidAudio, c.id, c.off, parent.id)
		}
		if err := fn(c); err != nil {
			return err
		}
		off = c.end
	}
	return nil
}
