package mp3dec

// Header is one parsed MPEG audio frame header (any layer, so callers can refuse layers I and
// II by name).
type Header struct {
	Version   int // 1, 2, or 25 (MPEG-2.5)
	Layer     int // 1, 2, 3
	Rate      int // Hz
	Channels  int
	Size      int // frame length in bytes, header included
	Samples   int // samples per channel per frame
	CRC       bool
	Mode      int // 0 stereo, 1 joint stereo, 2 dual channel, 3 mono
	ModeExt   int
	rateIndex int
}

var bitrates = [2][3][15]int{ // [v1, v2/2.5][layer-1][index] in kbit/s
	{
		{0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448},
		{0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},
		{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},
	},
	{
		{0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256},
		{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
		{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
	},
}

// ParseHeader decodes the 4 bytes at b. Free-format (bitrate index 0), reserved fields and the
// reserved emphasis value are refused.
func ParseHeader(b []byte) (Header, bool) {
	var h Header
	if len(b) < 4 || b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
		return h, false
	}
	switch (b[1] >> 3) & 3 {
	case 0:
		h.Version = 25
	case 2:
		h.Version = 2
	case 3:
		h.Version = 1
	default:
		return h, false
	}
	h.Layer = 4 - int((b[1]>>1)&3)
	if h.Layer == 4 {
		return h, false
	}
	h.CRC = b[1]&1 == 0
	bi := int(b[2] >> 4)
	si := int((b[2] >> 2) & 3)
	if bi == 0 || bi == 15 || si == 3 || b[3]&3 == 2 {
		return h, false
	}
	h.rateIndex = si
	h.Rate = [3]int{44100, 48000, 32000}[si]
	vi := 0
	switch h.Version {
	case 2:
		h.Rate /= 2
		vi = 1
	case 25:
		h.Rate /= 4
		vi = 1
	}
	br := bitrates[vi][h.Layer-1][bi] * 1000
	pad := int(b[2]>>1) & 1
	switch {
	case h.Layer == 1:
		h.Size = (12*br/h.Rate + pad) * 4
		h.Samples = 384
	case h.Layer == 2:
		h.Size = 144*br/h.Rate + pad
		h.Samples = 1152
	case h.Version == 1:
		h.Size = 144*br/h.Rate + pad
		h.Samples = 1152
	default:
		h.Size = 72*br/h.Rate + pad
		h.Samples = 576
	}
	h.Mode = int(b[3] >> 6)
	h.ModeExt = int(b[3]>>4) & 3
	h.Channels = 2
	if h.Mode == 3 {
		h.Channels = 1
	}
	return h, h.Size >= 4
}

// SameStream reports whether o can follow h in one stream.
func (h Header) SameStream(o Header) bool {
	return h.Version == o.Version && h.Layer == o.Layer && h.Rate == o.Rate
}

// SideInfoSize is the Layer III side information's size in bytes.
func (h Header) SideInfoSize() int {
	switch {
	case h.Version == 1 && h.Channels == 1:
		return 17
	case h.Version == 1:
		return 32
	case h.Channels == 1:
		return 9
	}
	return 17
}
