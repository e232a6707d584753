package procrunner

// Benchmarks of the worker-process protocol: each frame kind encoded (writeFrame's bytes) and
// decoded (readFrame), the way parent and child exchange them per job; BenchmarkFrameVsGob
// measures the same messages through this protocol (JSON header + blobs) and through gob with
// a fresh encoder per frame, which protocol version 2 used, side by side.
//
//	go test -run '^$' -bench . -benchmem ./runners/procrunner/

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"image"
	"testing"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

func benchFrames(b *testing.B) map[string]*message {
	b.Helper()
	seed := int64(7)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	b.Cleanup(cancel)
	imgJob, err := toWireJob(1, runners.Task{Ctx: ctx, Request: &runners.ImageRequest{
		Prompt: "Volcano on a beach", NegativePrompt: "low quality", NumInferenceSteps: 20, Seed: &seed, GuidanceScale: 7}})
	if err != nil {
		b.Fatal(err)
	}
	samples := make([]float32, 5*16000)
	for i := range samples {
		samples[i] = float32(i%200-100) / 100
	}
	audioJob, err := toWireJob(2, runners.Task{Ctx: ctx, Request: &runners.AudioRequest{Samples: samples, SampleRate: 16000, Duration: 5}})
	if err != nil {
		b.Fatal(err)
	}
	cnnJob, err := toWireJob(3, runners.Task{Ctx: ctx, Request: &runners.CNNRequest{Image: image.NewRGBA(image.Rect(0, 0, 224, 224)), TopK: 3}})
	if err != nil {
		b.Fatal(err)
	}
	imgRes, err := toWireResult(&runners.ImageResult{Images: []image.Image{image.NewRGBA(image.Rect(0, 0, 1024, 1024))}})
	if err != nil {
		b.Fatal(err)
	}
	tr := &runners.TranscriptionResult{Text: "The beach was a popular spot on a hot summer day.", Task: "transcribe", Language: "english", Duration: 5,
		Segments: []runners.TranscriptionSegment{{ID: 0, Speaker: "SPEAKER_00", StartTime: 0, EndTime: 5, Text: "The beach was a popular spot on a hot summer day."}}}
	trRes, err := toWireResult(tr)
	if err != nil {
		b.Fatal(err)
	}
	return map[string]*message{
		"batch_image":       {Kind: kindBatch, Jobs: []wireJob{imgJob}},
		"batch_audio_5s":    {Kind: kindBatch, Jobs: []wireJob{audioJob}},
		"batch_cnn_224":     {Kind: kindBatch, Jobs: []wireJob{cnnJob}},
		"result_image_1024": {Kind: kindResult, Job: 1, Result: imgRes},
		"result_transcript": {Kind: kindResult, Job: 2, Result: trRes},
		"chunk":             {Kind: kindChunk, Job: 2, Chunk: &wireTranscriptChunk{Text: " a streamed piece", ChunkID: 3}},
		"chunk_preview_256": {Kind: kindChunk, Job: 1, Seq: 4, Partial: toWirePartial(&runners.ImagePartial{
			Index: 1, Step: 10, Steps: 20, Image: preview(0, 0, 256, 256)})},
		"chunk_ack": {Kind: kindChunkAck, Job: 1, Seq: 4},
		"progress":  {Kind: kindProgress, Job: 1, Done: 10, Total: 20},
		"heartbeat": {Kind: kindHeartbeat},
	}
}

var frameOrder = []string{"batch_image", "batch_audio_5s", "batch_cnn_224", "result_image_1024", "result_transcript", "chunk",
	"chunk_preview_256", "chunk_ack", "progress", "heartbeat"}

func BenchmarkEncodeFrame(b *testing.B) {
	frames := benchFrames(b)
	for _, name := range frameOrder {
		m := frames[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f, err := encodeFrame(m)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(f)))
			}
		})
	}
}

func BenchmarkDecodeFrame(b *testing.B) {
	frames := benchFrames(b)
	for _, name := range frameOrder {
		f, err := encodeFrame(frames[name])
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(f)))
			b.ReportAllocs()
			for b.Loop() {
				m, err := readFrame(bytes.NewReader(f))
				if err != nil || m.Kind != frames[name].Kind {
					b.Fatal(err)
				}
			}
		})
	}
}

// gobFrame is version 2's framing: a 4-byte length, then the gob encoding of the message with a
// fresh encoder (so every frame decodes on its own, type descriptions included).
func gobFrame(m *message) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write([]byte{0, 0, 0, 0})
	if err := gob.NewEncoder(&buf).Encode(m); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b, nil
}

func gobRead(f []byte) (*message, error) {
	m := new(message)
	return m, gob.NewDecoder(bytes.NewReader(f[4:])).Decode(m)
}

// BenchmarkFrameVsGob: a round trip (encode, then decode) of each frame kind, per codec.
func BenchmarkFrameVsGob(b *testing.B) {
	frames := benchFrames(b)
	codecs := []struct {
		name string
		enc  func(*message) ([]byte, error)
		dec  func([]byte) (*message, error)
	}{
		{"json", encodeFrame, func(f []byte) (*message, error) { return readFrame(bytes.NewReader(f)) }},
		{"gob", gobFrame, gobRead},
	}
	for _, name := range frameOrder {
		for _, c := range codecs {
			b.Run(name+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					f, err := c.enc(frames[name])
					if err != nil {
						b.Fatal(err)
					}
					m, err := c.dec(f)
					if err != nil || m.Kind != frames[name].Kind {
						b.Fatal(err)
					}
					b.SetBytes(int64(len(f)))
				}
			})
		}
	}
}
