package procrunner

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// The worker protocol is language-neutral (docs/WORKER-PROTOCOL.md; a JSON Schema of the
// header in docs/worker-protocol.schema.json): a frame is
//
//	uint32 big-endian N   bytes that follow (header length field + header + payload)
//	uint32 big-endian H   length of the header
//	H bytes               the header: one JSON object (UTF-8), a message
//	N-4-H bytes           the payload: the message's binary blobs, back to back, in the
//	                      order of the header's "blobs" list (their lengths)
//
// Binary data (pixels, audio samples) travels as blobs, never inside the JSON: a field that
// holds one carries the blob's index. JSON keeps the header readable by any language's
// standard library (Python's json, no PyPI); the blobs keep megabytes of pixels out of base64.

// MaxFrame is the largest frame either side accepts (a frame carries one message; the biggest
// are a batch of audio requests and a batch of 1024x1024 RGBA images).
const MaxFrame = 256 << 20

// maxHeader bounds a frame's JSON header: a header holds no bulk data.
const maxHeader = 16 << 20

// ErrProtocol marks a malformed frame or an unexpected message.
var ErrProtocol = errors.New("worker protocol error")

// ProtocolVersion is the version of the framed protocol this build speaks. The parent sends it
// in warmup and the child answers ready with its own; a mismatch (a worker executable replaced
// on disk by another build while the server runs, a Python worker of another release) fails
// the warm-up with ErrProtocol instead of a confusing error later. Raise it whenever a
// message's meaning changes; adding an optional field that old peers may ignore does not need
// it.
//
//	1: transcript chunks, relayed without an answer (gob)
//	2: image previews as chunks, per-task progress, every chunk answered (chunk_ack) with
//	   the parent's Emit error (gob)
//	3: the language-neutral framing: JSON header plus binary blobs (a version-2 peer's gob
//	   frame fails to decode as ErrProtocol); later, additively: probe / probe_result, sent
//	   only to a worker whose ready says "probes" (the Python worker: the runner's
//	   health_check)
const ProtocolVersion = 3

// kind is a message type; on the wire it is its name.
type kind uint8

// Message types. Parent → child: warmup, batch, cancel, shutdown, chunk_ack, probe. Child →
// parent: ready, chunk, progress, result, heartbeat, probe_result.
const (
	kindWarmup kind = iota + 1
	kindReady
	kindBatch
	kindChunk
	kindResult
	kindCancel
	kindHeartbeat
	kindShutdown
	kindProgress
	kindChunkAck
	kindProbe
	kindProbeResult

	kindLast = kindProbeResult
)

var kindNames = [...]string{kindWarmup: "warmup", kindReady: "ready", kindBatch: "batch", kindChunk: "chunk",
	kindResult: "result", kindCancel: "cancel", kindHeartbeat: "heartbeat", kindShutdown: "shutdown",
	kindProgress: "progress", kindChunkAck: "chunk_ack", kindProbe: "probe", kindProbeResult: "probe_result"}

func (k kind) String() string {
	if k >= kindWarmup && k <= kindLast {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

func (k kind) MarshalJSON() ([]byte, error) { return json.Marshal(k.String()) }

// UnmarshalJSON maps an unknown name to kind 0, which readFrame refuses by name.
func (k *kind) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*k = 0
	for i, n := range kindNames {
		if n == s && n != "" {
			*k = kind(i)
		}
	}
	if *k == 0 {
		return fmt.Errorf("unknown message %q", s)
	}
	return nil
}

// millis is a duration that travels as whole milliseconds.
type millis time.Duration

func (d millis) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).Milliseconds()) }

func (d *millis) UnmarshalJSON(b []byte) error {
	var ms int64
	if err := json.Unmarshal(b, &ms); err != nil {
		return err
	}
	*d = millis(time.Duration(ms) * time.Millisecond)
	return nil
}

// message is one frame's header. Which fields are set depends on Kind.
type message struct {
	Kind kind `json:"kind"`
	// Warmup and Ready: the sender's ProtocolVersion.
	Version int `json:"version,omitempty"`
	// Ready: the worker answers probe messages (a health check of its runner that costs no
	// device time); without it the parent's Probe checks only that the process lives.
	Probes bool `json:"probes,omitempty"`
	// Warmup: the device group (for the worker's logs) and how often it sends heartbeats.
	Worker    string `json:"worker,omitempty"`
	Heartbeat millis `json:"heartbeat_ms,omitempty"`
	// Batch: the jobs to run together.
	Jobs []wireJob `json:"jobs,omitempty"`
	// Chunk, ChunkAck, Progress, Result, Cancel: the job.
	Job uint64 `json:"job,omitempty"`
	// Chunk and ChunkAck: the chunk's number (per child, from 1), which its answer repeats;
	// Probe and ProbeResult: the probe's number.
	Seq uint64 `json:"seq,omitempty"`
	// Chunk: a streamed piece, one of Chunk, Partial, Speech and VideoProgress.
	Chunk         *wireTranscriptChunk `json:"transcript,omitempty"`
	Partial       *wirePartial         `json:"preview,omitempty"`
	Speech        *wireSpeechChunk     `json:"speech,omitempty"`
	VideoProgress *wireVideoProgress   `json:"video_progress,omitempty"`
	// Progress: step Done of Total.
	Done  int `json:"done,omitempty"`
	Total int `json:"total,omitempty"`
	// Result: the job's value; Ready, Result, ChunkAck and ProbeResult: the error.
	Result *wireResult `json:"result,omitempty"`
	Err    *wireError  `json:"error,omitempty"`
	// Blobs are the byte lengths of the payload's blobs; encodeFrame fills it.
	Blobs []int `json:"blobs,omitempty"`
}

// blob is binary data carried in the frame's payload; in the header it is its index.
type blob struct {
	index int
	Data  []byte
}

func (b blob) MarshalJSON() ([]byte, error) { return json.Marshal(b.index) }

func (b *blob) UnmarshalJSON(d []byte) error { return json.Unmarshal(d, &b.index) }

// eachBlob calls fn on every blob of the message, in a fixed order (the payload's).
func (m *message) eachBlob(fn func(*blob)) {
	for i := range m.Jobs {
		j := &m.Jobs[i]
		if j.Audio != nil {
			fn(&j.Audio.Samples)
		}
		if j.CNN != nil {
			fn(&j.CNN.Image.Pixels)
		}
		if j.Image != nil && j.Image.InitImage != nil {
			fn(&j.Image.InitImage.Pixels)
		}
		if j.Image != nil && j.Image.Mask != nil {
			fn(&j.Image.Mask.Pixels)
		}
		if j.Speech != nil && j.Speech.Embedding != nil {
			fn(j.Speech.Embedding)
		}
		if j.Video != nil {
			for k := range j.Video.Images {
				fn(&j.Video.Images[k].Image.Pixels)
			}
		}
	}
	if m.Partial != nil && m.Partial.Image != nil {
		fn(&m.Partial.Image.Pixels)
	}
	if m.Speech != nil {
		fn(&m.Speech.Samples)
	}
	if m.Result != nil {
		for i := range m.Result.Images {
			fn(&m.Result.Images[i].Pixels)
		}
		if m.Result.CNN != nil && m.Result.CNN.Mask != nil {
			fn(&m.Result.CNN.Mask.Class)
		}
		if m.Result.Speech != nil {
			fn(&m.Result.Speech.Samples)
		}
		if m.Result.Video != nil && m.Result.Video.Pixels != nil {
			fn(m.Result.Video.Pixels)
		}
	}
}

// writeFrame writes one message.
func writeFrame(w io.Writer, m *message) error {
	b, err := encodeFrame(m)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write %v frame: %w", m.Kind, err)
	}
	return nil
}

// encodeFrame returns the frame's bytes, length prefixes included. It numbers m's blobs and
// fills m.Blobs.
func encodeFrame(m *message) ([]byte, error) {
	var payload [][]byte
	size := 0
	m.Blobs = m.Blobs[:0]
	m.eachBlob(func(b *blob) {
		b.index = len(payload)
		payload = append(payload, b.Data)
		m.Blobs = append(m.Blobs, len(b.Data))
		size += len(b.Data)
	})
	hdr, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %v frame: %w", m.Kind, err)
	}
	n := 4 + len(hdr) + size
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: %v frame of %d bytes exceeds %d", ErrProtocol, m.Kind, n, MaxFrame)
	}
	out := make([]byte, 8, 4+n)
	binary.BigEndian.PutUint32(out, uint32(n))
	binary.BigEndian.PutUint32(out[4:], uint32(len(hdr)))
	out = append(out, hdr...)
	for _, p := range payload {
		out = append(out, p...)
	}
	return out, nil
}

// readAhead is how much of a frame's announced length readFrame allocates before the bytes
// arrive: a whole 1024² RGBA result at once, while a corrupt length cannot make it allocate
// the announced size (up to MaxFrame) for bytes that never come.
const readAhead = 8 << 20

// readFrame reads one message. It returns io.EOF only at a clean frame boundary. Blobs point
// into the frame's buffer (no copy).
func readFrame(r io.Reader) (*message, error) {
	var lenField [4]byte
	if _, err := io.ReadFull(r, lenField[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: truncated frame header", ErrProtocol)
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(lenField[:])
	if n < 4 || n > MaxFrame {
		return nil, fmt.Errorf("%w: frame length %d (4..%d)", ErrProtocol, n, MaxFrame)
	}
	// Allocate up to readAhead at once; beyond it, grow with what arrives.
	body := make([]byte, min(int(n), readAhead))
	got, err := io.ReadFull(r, body)
	if err == nil && int(n) > len(body) {
		var rest []byte
		rest, err = io.ReadAll(io.LimitReader(r, int64(n)-int64(len(body))))
		body = append(body, rest...)
		got = len(body)
	}
	if err != nil || got != int(n) {
		return nil, fmt.Errorf("%w: truncated frame (%d of %d bytes): %v", ErrProtocol, got, n, err)
	}
	return decodeFrame(body)
}

// decodeFrame decodes a frame's body (everything after its length field).
func decodeFrame(body []byte) (*message, error) {
	h := binary.BigEndian.Uint32(body)
	if h == 0 || h > maxHeader || int64(h) > int64(len(body)-4) {
		return nil, fmt.Errorf("%w: header length %d in a frame of %d bytes", ErrProtocol, h, len(body))
	}
	hdr, payload := body[4:4+h], body[4+h:]
	m := new(message)
	if err := json.Unmarshal(hdr, m); err != nil {
		return nil, fmt.Errorf("%w: decode frame header: %w", ErrProtocol, err)
	}
	if m.Kind < kindWarmup || m.Kind > kindLast {
		return nil, fmt.Errorf("%w: unknown message %v", ErrProtocol, m.Kind)
	}
	offs := make([]int, len(m.Blobs)+1)
	for i, l := range m.Blobs {
		if l < 0 || l > len(payload) {
			return nil, fmt.Errorf("%w: blob %d of %d bytes in a payload of %d", ErrProtocol, i, l, len(payload))
		}
		offs[i+1] = offs[i] + l
	}
	if offs[len(m.Blobs)] != len(payload) {
		return nil, fmt.Errorf("%w: blobs of %d bytes in a payload of %d", ErrProtocol, offs[len(m.Blobs)], len(payload))
	}
	var bad error
	m.eachBlob(func(b *blob) {
		if b.index < 0 || b.index >= len(m.Blobs) {
			bad = fmt.Errorf("%w: %v frame refers to blob %d of %d", ErrProtocol, m.Kind, b.index, len(m.Blobs))
			return
		}
		b.Data = payload[offs[b.index]:offs[b.index+1]:offs[b.index+1]]
	})
	if bad != nil {
		return nil, bad
	}
	return m, nil
}
