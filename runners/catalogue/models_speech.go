package catalogue

// RunnerSpeechT5 is text-to-speech (microsoft/speecht5_tts with the speecht5_hifigan vocoder).
const RunnerSpeechT5 = "tt-speecht5-tts"

// speecht5Step is the unscaled simulator latency of one speecht5-decoder-step + speecht5-postnet
// (one 32 ms step of speech).
const speecht5Step = 6.5e-3

// speecht5Programs are SpeechT5's device programs: the encoder of each padded length (HEAD's
// WARMUP_ENCODER_SIZES), the decoder step, the postnet and the vocoder.
func speecht5Programs() []string {
	ps := []string{}
	for _, n := range []string{"32", "64", "128", "160", "192", "256"} {
		ps = append(ps, "speecht5-encoder-"+n)
	}
	return append(ps, "speecht5-decoder-step", "speecht5-postnet", "speecht5-vocoder")
}

func programList(names []string) []Program {
	out := make([]Program, len(names))
	for i, n := range names {
		out[i] = Program{Name: n}
	}
	return out
}

var speechModels = []Model{
	// SpeechT5 (HEAD's tt-speecht5-tts): an encoder per padded length, the traced decoder step,
	// the postnet and the HiFi-GAN vocoder; HEAD's device options (l1_small_size 150000, a 50 MB
	// trace region).
	{Name: RunnerSpeechT5, Service: ServiceTextToSpeech, Default: true, Canonical: "microsoft/speecht5_tts",
		ModelNames: []ModelName{{"speecht5_tts", "microsoft/speecht5_tts"}},
		Presets: map[string]Preset{ // HEAD's n150 and n300 cells (P150/P300 are not DEVICE values here)
			DeviceN150: {one, false, deviceIDs1, 1, 0},
			DeviceN300: {one, false, deviceIDs1, 1, 0},
		},
		Device:   DeviceOptions{L1SmallSize: 150_000, TraceRegionSize: 50_000_000, CommandQueues: 1},
		Sim:      Simulation{Programs: speecht5Programs(), Traced: "speecht5-decoder-step", UnitSeconds: speecht5Step},
		Programs: programList(speecht5Programs()), PythonClass: "tt_model_runners.speecht5_runner.TTSpeechT5Runner",
		GoPipeline: true},
}
