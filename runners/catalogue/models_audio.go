package catalogue

import "time"

// RunnerWhisper is HEAD's Whisper runner.
const RunnerWhisper = "tt-whisper"

// Unscaled simulator latencies of the Whisper programs (the ttnn/programs manifests').
const (
	whisperEncoder    = 153.5e-3 // s per whisper-encoder window
	whisperDecoder    = 9.524e-3 // s per whisper-decoder-step
	whisperWindow     = 30.0     // s of audio per encoder window
	tokensPerAudioSec = 3.0      // decoder steps per second of audio (speech is ~2-3 tokens/s)
)

var audioModels = []Model{
	{Name: RunnerWhisper, Service: ServiceAudio, Default: true, Canonical: "openai-whisper-large-v3",
		ModelNames: []ModelName{{"distil-whisper/distil-large-v3", "distil-whisper/distil-large-v3"},
			{"openai-whisper-large-v3", "openai/whisper-large-v3"}},
		Device: DeviceOptions{L1SmallSize: 1024, TraceRegionSize: 100_000_000, CommandQueues: 2},
		// HEAD's cells: one chip per worker, batch 2 (BatchFifo) on t3k and galaxy.
		Presets: map[string]Preset{
			DeviceN150:   {one, false, deviceIDs1, 1, 0},
			DeviceN300:   {one, false, deviceIDs1, 1, 0},
			DeviceGalaxy: {one, true, deviceIDs32, 2, 5000 * time.Second},
			DeviceT3K:    {one, false, deviceIDs4, 2, 0},
		},
		Sim: Simulation{Programs: []string{"whisper-encoder", "whisper-decoder-step"}, Traced: "whisper-decoder-step",
			UnitSeconds: whisperEncoder/whisperWindow + tokensPerAudioSec*whisperDecoder},
		Programs:    []Program{{Name: "whisper-encoder"}, {Name: "whisper-decoder-step"}},
		PythonClass: "tt_model_runners.whisper_runner.TTWhisperRunner", GoPipeline: true},
}
