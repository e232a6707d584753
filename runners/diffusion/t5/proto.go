package t5

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Piece types of sentencepiece's ModelProto.SentencePiece.Type.
const (
	typeNormal      = 1
	typeUnknown     = 2
	typeControl     = 3
	typeUserDefined = 4
	typeUnused      = 5
	typeByte        = 6
)

// piece is one vocabulary entry: its text, its log-probability score and its type.
type piece struct {
	text  string
	score float32
	typ   int32
}

// normalizerSpec holds the fields of sentencepiece's NormalizerSpec that Encode uses.
type normalizerSpec struct {
	charsmap          []byte
	addDummyPrefix    bool
	removeExtraSpaces bool
	escapeWhitespaces bool
	present           bool
}

// modelProto holds the fields of sentencepiece's ModelProto that Encode and Decode use.
type modelProto struct {
	pieces       []piece
	modelType    int32
	byteFallback bool
	wsAsSuffix   bool
	eosID        int32
	padID        int32
	unkSurface   string
	normalizer   normalizerSpec
	denormalizer normalizerSpec
}

// protoReader walks protobuf wire-format fields.
type protoReader struct {
	b   []byte
	off int
}

func (r *protoReader) varint() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad varint at byte %d", ErrInvalidModel, r.off)
	}
	r.off += n
	return v, nil
}

// next returns the next field's number, wire type and, for wire types 0 and 5, its value in
// val; for wire type 2 the payload in data. Fixed64 fields are skipped by value.
func (r *protoReader) next() (field int, wire int, val uint64, data []byte, err error) {
	key, err := r.varint()
	if err != nil {
		return 0, 0, 0, nil, err
	}
	field, wire = int(key>>3), int(key&7)
	if field == 0 {
		return 0, 0, 0, nil, fmt.Errorf("%w: field number 0 at byte %d", ErrInvalidModel, r.off)
	}
	switch wire {
	case 0:
		val, err = r.varint()
	case 1:
		if len(r.b)-r.off < 8 {
			return 0, 0, 0, nil, fmt.Errorf("%w: truncated fixed64", ErrInvalidModel)
		}
		val = binary.LittleEndian.Uint64(r.b[r.off:])
		r.off += 8
	case 2:
		var n uint64
		if n, err = r.varint(); err != nil {
			return 0, 0, 0, nil, err
		}
		if n > uint64(len(r.b)-r.off) {
			return 0, 0, 0, nil, fmt.Errorf("%w: field %d length %d past the end", ErrInvalidModel, field, n)
		}
		data = r.b[r.off : r.off+int(n)]
		r.off += int(n)
	case 5:
		if len(r.b)-r.off < 4 {
			return 0, 0, 0, nil, fmt.Errorf("%w: truncated fixed32", ErrInvalidModel)
		}
		val = uint64(binary.LittleEndian.Uint32(r.b[r.off:]))
		r.off += 4
	default:
		return 0, 0, 0, nil, fmt.Errorf("%w: unsupported wire type %d (field %d)", ErrInvalidModel, wire, field)
	}
	return field, wire, val, data, err
}

func (r *protoReader) more() bool { return r.off < len(r.b) }

// parseModelProto decodes a serialized sentencepiece ModelProto, with proto2 defaults for the
// fields that are absent.
func parseModelProto(b []byte) (*modelProto, error) {
	m := &modelProto{
		modelType: 1, eosID: 2, padID: -1,
		unkSurface: " \u2047 ",
		normalizer: defaultNormalizerSpec(), denormalizer: defaultNormalizerSpec(),
	}
	r := &protoReader{b: b}
	for r.more() {
		field, wire, _, data, err := r.next()
		if err != nil {
			return nil, err
		}
		switch {
		case field == 1 && wire == 2:
			p, err := parsePiece(data)
			if err != nil {
				return nil, err
			}
			m.pieces = append(m.pieces, p)
		case field == 2 && wire == 2:
			if err := parseTrainerSpec(data, m); err != nil {
				return nil, err
			}
		case field == 3 && wire == 2:
			if err := parseNormalizerSpec(data, &m.normalizer); err != nil {
				return nil, err
			}
		case field == 5 && wire == 2:
			if err := parseNormalizerSpec(data, &m.denormalizer); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func defaultNormalizerSpec() normalizerSpec {
	return normalizerSpec{addDummyPrefix: true, removeExtraSpaces: true, escapeWhitespaces: true}
}

func parsePiece(b []byte) (piece, error) {
	p := piece{typ: typeNormal}
	r := &protoReader{b: b}
	for r.more() {
		field, wire, val, data, err := r.next()
		if err != nil {
			return p, err
		}
		switch {
		case field == 1 && wire == 2:
			p.text = string(data)
		case field == 2 && wire == 5:
			p.score = math.Float32frombits(uint32(val))
		case field == 3 && wire == 0:
			p.typ = int32(val)
		}
	}
	return p, nil
}

func parseTrainerSpec(b []byte, m *modelProto) error {
	r := &protoReader{b: b}
	for r.more() {
		field, wire, val, data, err := r.next()
		if err != nil {
			return err
		}
		if wire == 0 {
			switch field {
			case 3:
				m.modelType = int32(val)
			case 24:
				m.wsAsSuffix = val != 0
			case 35:
				m.byteFallback = val != 0
			case 42:
				m.eosID = int32(val)
			case 43:
				m.padID = int32(val)
			}
		} else if wire == 2 && field == 44 {
			m.unkSurface = string(data)
		}
	}
	return nil
}

func parseNormalizerSpec(b []byte, n *normalizerSpec) error {
	n.present = true
	r := &protoReader{b: b}
	for r.more() {
		field, wire, val, data, err := r.next()
		if err != nil {
			return err
		}
		switch {
		case field == 2 && wire == 2:
			n.charsmap = data
		case field == 3 && wire == 0:
			n.addDummyPrefix = val != 0
		case field == 4 && wire == 0:
			n.removeExtraSpaces = val != 0
		case field == 5 && wire == 0:
			n.escapeWhitespaces = val != 0
		}
	}
	return nil
}
