package t5

import (
	"encoding/binary"
	"fmt"
	"math"
)

// protoBuilder writes protobuf wire format, to make small sentencepiece models in tests.
type protoBuilder struct{ b []byte }

func (p *protoBuilder) key(field, wire int) { p.b = binary.AppendUvarint(p.b, uint64(field<<3|wire)) }

func (p *protoBuilder) varint(field int, v int64) *protoBuilder {
	p.key(field, 0)
	p.b = binary.AppendUvarint(p.b, uint64(v))
	return p
}

func (p *protoBuilder) bool(field int, v bool) *protoBuilder {
	if v {
		return p.varint(field, 1)
	}
	return p.varint(field, 0)
}

func (p *protoBuilder) float(field int, v float32) *protoBuilder {
	p.key(field, 5)
	p.b = binary.LittleEndian.AppendUint32(p.b, math.Float32bits(v))
	return p
}

func (p *protoBuilder) bytes(field int, v []byte) *protoBuilder {
	p.key(field, 2)
	p.b = binary.AppendUvarint(p.b, uint64(len(v)))
	p.b = append(p.b, v...)
	return p
}

func (p *protoBuilder) str(field int, v string) *protoBuilder { return p.bytes(field, []byte(v)) }

// testPiece is one vocabulary entry of a test model.
type testPiece struct {
	text  string
	score float32
	typ   int32
}

// testModel describes a sentencepiece model to serialize.
type testModel struct {
	pieces         []testPiece
	modelType      int64 // 0: leave the default (UNIGRAM)
	byteFallback   bool
	wsSuffix       bool
	unk, eos, pad  int64 // trainer_spec ids, written only when non-zero ...
	setIDs         bool  // ... or always when setIDs
	noDummyPrefix  bool
	keepWhitespace bool // remove_extra_whitespaces=false
	noEscape       bool
	charsmap       []byte
}

func (m testModel) bytes() []byte {
	var out protoBuilder
	for _, p := range m.pieces {
		var pb protoBuilder
		pb.str(1, p.text).float(2, p.score)
		if p.typ != 0 {
			pb.varint(3, int64(p.typ))
		}
		out.bytes(1, pb.b)
	}
	var ts protoBuilder
	if m.modelType != 0 {
		ts.varint(3, m.modelType)
	}
	if m.byteFallback {
		ts.bool(35, true)
	}
	if m.wsSuffix {
		ts.bool(24, true)
	}
	if m.setIDs {
		ts.varint(40, m.unk).varint(42, m.eos).varint(43, m.pad).varint(41, -1)
	}
	out.bytes(2, ts.b)
	var ns protoBuilder
	ns.str(1, "test")
	if m.charsmap != nil {
		ns.bytes(2, m.charsmap)
	}
	if m.noDummyPrefix {
		ns.bool(3, false)
	}
	if m.keepWhitespace {
		ns.bool(4, false)
	}
	if m.noEscape {
		ns.bool(5, false)
	}
	out.bytes(3, ns.b)
	return out.b
}

// t5Layout is the special-piece layout of T5's spiece.model: <pad> 0, </s> 1, <unk> 2.
func t5Layout(pieces ...testPiece) testModel {
	base := []testPiece{{"<pad>", 0, typeControl}, {"</s>", 0, typeControl}, {"<unk>", 0, typeUnknown}}
	return testModel{pieces: append(base, pieces...), setIDs: true, unk: 2, eos: 1, pad: 0}
}

// withBytes appends the 256 <0xXX> byte pieces.
func withBytes(m testModel) testModel {
	for b := range 256 {
		m.pieces = append(m.pieces, testPiece{fmt.Sprintf("<0x%02X>", b), 0, typeByte})
	}
	m.byteFallback = true
	return m
}
