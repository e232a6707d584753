package procrunner

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// protocolSchema compiles docs/worker-protocol.schema.json, the header schema other-language
// workers are written against.
func protocolSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	path := filepath.Join("..", "..", "docs", "worker-protocol.schema.json")
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("worker-protocol.schema.json", doc))
	s, err := c.Compile("worker-protocol.schema.json")
	require.NoError(t, err)
	return s
}

// frameHeader returns the JSON header of an encoded frame.
func frameHeader(t testing.TB, f []byte) []byte {
	t.Helper()
	h := binary.BigEndian.Uint32(f[4:])
	return f[8 : 8+h]
}

// TestFramesMatchTheSchema: every message the Go side sends validates against the published
// schema, and the schema is not vacuous (it rejects headers the spec forbids).
func TestFramesMatchTheSchema(t *testing.T) {
	s := protocolSchema(t)
	seed := int64(3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := func(req runners.Request, emit bool) wireJob {
		task := runners.Task{Ctx: ctx, Request: req}
		if emit {
			task.Emit = func(runners.Chunk) error { return nil }
			task.Progress = func(int, int) {}
		}
		j, err := toWireJob(5, task)
		require.NoError(t, err)
		return j
	}
	res := func(v runners.Result) *wireResult {
		w, err := toWireResult(v)
		require.NoError(t, err)
		return w
	}
	_, pv, err := toWireChunk(&runners.ImagePartial{Index: 1, Step: 3, Steps: 9, Image: preview(0, 0, 4, 4)})
	require.NoError(t, err)
	valid := map[string]*message{
		"warmup":    {Kind: kindWarmup, Version: ProtocolVersion, Worker: "0,1", Heartbeat: millis(time.Second)},
		"ready":     {Kind: kindReady, Version: ProtocolVersion},
		"ready err": {Kind: kindReady, Version: ProtocolVersion, Err: toWireError(runners.ErrDeviceLost)},
		"batch": {Kind: kindBatch, Jobs: []wireJob{
			job(&runners.ImageRequest{Prompt: "p", Seed: &seed, NumInferenceSteps: 20, Timesteps: []float64{}, PartialImages: 2}, true),
			job(&runners.AudioRequest{Samples: []float32{1, 2}, SampleRate: 16000, Duration: 1, Segments: []runners.Span{{Start: 0, End: 1}}}, false),
			job(&runners.CNNRequest{Image: preview(0, 0, 3, 2), TopK: 3, MinConfidence: 70}, false),
			job(&runners.SpeechRequest{Text: "hi", SpeakerID: "speaker_7306", Stream: true}, true),
			job(&runners.SpeechRequest{Text: "hi", Embedding: make([]float32, runners.SpeechEmbeddingDim)}, false),
			job(&runners.VideoRequest{Prompt: "p", Steps: 4, Seed: 7, Width: 8, Height: 4, Frames: 5,
				Images: []runners.VideoImage{{Image: preview(0, 0, 3, 2), FramePos: 4}}}, true),
		}},
		"speech chunk":   {Kind: kindChunk, Job: 5, Seq: 4, Speech: &wireSpeechChunk{Chunks: 2, Samples: blob{Data: make([]byte, 8)}, SampleRate: 16000}},
		"video progress": {Kind: kindChunk, Job: 5, Seq: 5, VideoProgress: &wireVideoProgress{Done: 0, Total: 4}},
		"speech":         {Kind: kindResult, Job: 5, Result: res(&runners.SpeechResult{Samples: []float32{0.5}, SampleRate: 16000, SpeakerID: "speaker_7306"})},
		"video":          {Kind: kindResult, Job: 5, Result: res(&runners.VideoResult{Width: 2, Height: 1, FPS: 16, Frames: [][]byte{make([]byte, 6)}})},
		"cancel":         {Kind: kindCancel, Job: 5},
		"chunk":          {Kind: kindChunk, Job: 5, Seq: 1, Chunk: &wireTranscriptChunk{Text: "hi", ChunkID: 1}},
		"preview":        {Kind: kindChunk, Job: 5, Seq: 2, Partial: pv},
		"chunk_ack":      {Kind: kindChunkAck, Job: 5, Seq: 2, Err: toWireError(context.Canceled)},
		"progress":       {Kind: kindProgress, Job: 5, Done: 1, Total: 20},
		"heartbeat":      {Kind: kindHeartbeat},
		"shutdown":       {Kind: kindShutdown},
		"probe":          {Kind: kindProbe, Seq: 3},
		"probe ok":       {Kind: kindProbeResult, Seq: 3},
		"probe fails":    {Kind: kindProbeResult, Seq: 3, Err: toWireError(errors.New("health_check returned False"))},
		"ready probes":   {Kind: kindReady, Version: ProtocolVersion, Probes: true},
		"image":          {Kind: kindResult, Job: 5, Result: res(&runners.ImageResult{Images: []image.Image{preview(0, 0, 2, 2)}})},
		"transcript":     {Kind: kindResult, Job: 5, Result: res(&runners.TranscriptionResult{Text: "hi", Segments: []runners.TranscriptionSegment{{Text: "hi", Tokens: []int{1}}}})},
		"cnn":            {Kind: kindResult, Job: 5, Result: res(&runners.CNNResult{Top: []runners.Classification{{Label: "tabby", Index: 281, Probability: 0.5}}})},
		"cnn boxes": {Kind: kindResult, Job: 5, Result: res(&runners.CNNResult{Detections: []runners.Detection{
			{Label: "dog", Index: 16, Score: 0.9, Box: [4]float64{0.1, 0.2, 0.5, 0.75}}}})},
		"cnn mask": {Kind: kindResult, Job: 5, Result: res(&runners.CNNResult{Top: []runners.Classification{{Label: "road", Index: 0, Probability: 1}},
			Mask: &runners.Mask{Width: 2, Height: 1, Class: []uint8{0, 0}, Labels: []string{"road"}}})},
		"job errored": {Kind: kindResult, Job: 5, Err: toWireError(runners.ErrBadRequest)},
	}
	for name, m := range valid {
		t.Run(name, func(t *testing.T) {
			f, err := encodeFrame(m)
			require.NoError(t, err)
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(frameHeader(t, f)))
			require.NoError(t, err)
			require.NoError(t, s.Validate(inst), "%s", frameHeader(t, f))
		})
	}
	invalid := []string{
		`{"kind":"nap"}`,
		`{"kind":"warmup","version":3}`,
		`{"kind":"batch","jobs":[{"id":1}]}`,
		`{"kind":"batch","jobs":[{"id":1,"image":{"prompt":"p","num_inference_steps":2},"cnn":{"image":{"width":1,"height":1,"format":"rgb8","pixels":0}}}]}`,
		`{"kind":"result","job":1}`,
		`{"kind":"chunk","job":1,"seq":1}`,
		`{"kind":"probe"}`,
		`{"kind":"result","job":1,"result":{"images":[{"width":1,"height":1,"format":"bgr8","pixels":0}]}}`,
		`{"kind":"result","job":1,"error":{"class":"oops","message":"x"}}`,
		`{"kind":"result","job":1,"result":{"cnn":{"top":[],"detections":[{"label":"dog","index":1,"score":0.5,"box":[1,2,3]}]}}}`,
		`{"kind":"result","job":1,"result":{"cnn":{"top":[],"mask":{"width":2,"height":1,"class":"AAA="}}}}`,
	}
	for _, h := range invalid {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(h)))
		require.NoError(t, err)
		require.Error(t, s.Validate(inst), h)
	}
}
