// Package bombwebm makes the WebM "decoding bomb" of issue 30 for tests and
// scripts/membudget-rss.sh: a small WebM whose Opus track is many tiny blocks, each a 1-byte
// packet (a CELT TOC with no frame data: 2.5 ms of concealment) that decodes to 120 samples, so
// 7 bytes of file become 480 bytes of float32 at 48 kHz (100,000 blocks: 700 KB, 250 s).
package bombwebm

import "encoding/binary"

// elem appends an EBML element: its ID bytes, its size as an 8-byte vint, and data.
func elem(b []byte, id []byte, data []byte) []byte {
	b = append(b, id...)
	var size [8]byte
	binary.BigEndian.PutUint64(size[:], uint64(len(data)))
	size[0] = 0x01 // the vint's length marker: 7 more bytes
	b = append(b, size[:]...)
	return append(b, data...)
}

func uintElem(b []byte, id []byte, v uint64) []byte {
	return elem(b, id, binary.BigEndian.AppendUint64(nil, v))
}

// blocksPerCluster keeps each block's 16-bit relative timecode in range (2.5 ms blocks).
const blocksPerCluster = 10000

// OpusBlocks returns a WebM of n 2.5 ms Opus blocks on one mono 48 kHz track.
func OpusBlocks(n int) []byte {
	head := []byte("OpusHead")
	head = append(head, 1, 1) // version, channels
	head = binary.LittleEndian.AppendUint16(head, 0)
	head = binary.LittleEndian.AppendUint32(head, 48000)
	head = append(head, 0, 0, 0) // gain, mapping family
	var ebml []byte
	ebml = elem(ebml, []byte{0x42, 0x82}, []byte("webm")) // DocType
	ebml = uintElem(ebml, []byte{0x42, 0x87}, 4)          // DocTypeVersion
	ebml = uintElem(ebml, []byte{0x42, 0x85}, 2)          // DocTypeReadVersion
	var audio []byte
	audio = uintElem(audio, []byte{0x9f}, 1) // Channels
	var entry []byte
	entry = uintElem(entry, []byte{0xd7}, 1) // TrackNumber
	entry = uintElem(entry, []byte{0x73, 0xc5}, 1)
	entry = uintElem(entry, []byte{0x83}, 2) // TrackType: audio
	entry = elem(entry, []byte{0x86}, []byte("A_OPUS"))
	entry = elem(entry, []byte{0x63, 0xa2}, head)
	entry = elem(entry, []byte{0xe1}, audio)
	var seg []byte
	seg = elem(seg, []byte{0x16, 0x54, 0xae, 0x6b}, elem(nil, []byte{0xae}, entry))
	for c := 0; c < n; c += blocksPerCluster {
		cl := uintElem(nil, []byte{0xe7}, uint64(c)*5/2) // Timecode (ms)
		for i := 0; i < min(blocksPerCluster, n-c); i++ {
			t := uint16(i * 5 / 2)
			// SimpleBlock, size 5: track 1, timecode, keyframe flag, TOC config 16 (CELT 2.5 ms), code 0.
			cl = append(cl, 0xa3, 0x85, 0x81, byte(t>>8), byte(t), 0x80, 16<<3)
		}
		seg = elem(seg, []byte{0x1f, 0x43, 0xb6, 0x75}, cl)
	}
	out := elem(nil, []byte{0x1a, 0x45, 0xdf, 0xa3}, ebml)
	return elem(out, []byte{0x18, 0x53, 0x80, 0x67}, seg)
}
