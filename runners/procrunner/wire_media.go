package procrunner

// The wire parts of text-to-speech and video jobs (docs/WORKER-PROTOCOL.md): like the other
// parts in wire.go, each mirrors a runners type field by field. Samples and pixels travel as
// blobs: a speech result as little-endian float32 samples, a clip as its frames' RGB24 bytes
// back to back (never base64).

// wireSpeechRequest is a runners.SpeechRequest. Embedding, when set, is the client's x-vector:
// runners.SpeechEmbeddingDim little-endian float32s.
type wireSpeechRequest struct {
	Text      string `json:"text"`
	SpeakerID string `json:"speaker_id,omitempty"`
	Embedding *blob  `json:"speaker_embedding,omitempty"`
	Stream    bool   `json:"stream,omitempty"`
}

// wireSpeech is a runners.SpeechResult: mono float32 samples in [-1, 1] at SampleRate.
type wireSpeech struct {
	Samples    blob   `json:"samples"`
	SampleRate int    `json:"sample_rate"`
	SpeakerID  string `json:"speaker_id,omitempty"`
	Chunks     int    `json:"chunks,omitempty"`
	Steps      int    `json:"steps,omitempty"`
	Tokens     int    `json:"tokens,omitempty"`
}

// wireSpeechChunk is a *runners.SpeechChunk: one text chunk's audio, streamed.
type wireSpeechChunk struct {
	Index      int  `json:"index"`
	Chunks     int  `json:"chunks"`
	Samples    blob `json:"samples"`
	SampleRate int  `json:"sample_rate"`
}

// wireVideoRequest is a runners.VideoRequest (the server has resolved steps, seed and the
// clip's size); Images are the I2V conditioning frames.
type wireVideoRequest struct {
	Prompt         string           `json:"prompt"`
	NegativePrompt string           `json:"negative_prompt,omitempty"`
	Steps          int              `json:"num_inference_steps"`
	Seed           int64            `json:"seed"`
	Width          int              `json:"width"`
	Height         int              `json:"height"`
	Frames         int              `json:"num_frames"`
	Images         []wireVideoImage `json:"image_prompts,omitempty"`
}

// wireVideoImage is a runners.VideoImage.
type wireVideoImage struct {
	Image    wireImage `json:"image"`
	FramePos int       `json:"frame_pos"`
}

// wireVideo is a runners.VideoResult: Frames pictures of Width×Height RGB24 in one blob, rows
// top to bottom, frames in order; or, from a runner that encoded the MP4 itself, File, its
// path (never its bytes), with FPS and no pixels (file_result.go).
type wireVideo struct {
	Width  int    `json:"width,omitempty"`
	Height int    `json:"height,omitempty"`
	FPS    int    `json:"fps"`
	Frames int    `json:"frames,omitempty"`
	Pixels *blob  `json:"pixels,omitempty"`
	File   string `json:"file,omitempty"`
}

// wireVideoProgress is a runners.VideoProgress (a chunk: the parent's Emit answers it, so a
// cancelled job stops the runner at its next step).
type wireVideoProgress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}
