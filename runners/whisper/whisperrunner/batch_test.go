//go:build cgo

package whisperrunner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/whisper/transcribe"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

func loadBatchModel(t testing.TB, dev *ttnn.Device, maxBatch int) *BatchModel {
	t.Helper()
	m, err := LoadBatchModel(context.Background(), dev, ttnn.SimPrograms(), maxBatch)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}

func TestBatchSize(t *testing.T) {
	for _, tc := range []struct{ max, want int }{{0, 1}, {1, 1}, {2, 2}, {3, 4}, {4, 4}, {9, 4}} {
		require.Equal(t, tc.want, BatchSize(ttnn.SimPrograms(), tc.max), "MAX_BATCH_SIZE %d", tc.max)
	}
	require.Equal(t, DecoderProgram, BatchProgram(1))
	require.Equal(t, DecoderProgram+"-b4", BatchProgram(4))
}

// lanes transcribes each audio on its own lane of m at once and returns the results.
func lanes(t *testing.T, m *BatchModel, opts transcribe.Options, audios ...[]float32) []transcribe.Result {
	t.Helper()
	tok := largeV3(t)
	res := make([]transcribe.Result, len(audios))
	errs := make([]error, len(audios))
	var wg sync.WaitGroup
	for i := range audios {
		m.Begin(i)
		wg.Go(func() {
			defer m.Finish(i)
			res[i], errs[i] = transcribe.Transcribe(context.Background(), m.Lane(i), tok, audios[i], opts, nil)
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	return res
}

// TestBatchScriptedLanesMatchBatchOne: two windows with different hand-scripted segments in
// one batched decode give exactly what each gives alone on the batch-1 Model, in as many
// device steps as the longer one takes alone (lock-step, one token per row per step).
func TestBatchScriptedLanesMatchBatchOne(t *testing.T) {
	tok := largeV3(t)
	T := func(sec float64) int { return ts(tok, sec) }
	S := func(parts ...any) []int { return seq(tok, parts...) }
	decA := dec{emit: S(T(0), " Hello world.", T(2), T(2), " Second part.", T(4.5))}
	decB := dec{emit: S(T(0), " Short.", T(1)), nospeech: 0.2}
	audioA, audioB := make([]float32, 10*16000), make([]float32, 5*16000)
	dev := openDevice(t)
	opts := transcribe.DefaultOptions()
	opts.Language = "en"

	alone := func(d dec, x []float32) (transcribe.Result, uint64) {
		writeScript(t, d)
		m := loadModel(t, dev)
		o := opts
		o.NMels = m.NMels()
		res, err := transcribe.Transcribe(context.Background(), m, tok, x, o, nil)
		require.NoError(t, err)
		bm := loadBatchModel(t, dev, 2)
		lane := lanes(t, bm, o, x)
		require.Equal(t, res, lane[0], "one lane of a batch-2 step alone = the batch-1 model")
		return res, bm.Steps()
	}
	resA, stepsA := alone(decA, audioA)
	resB, stepsB := alone(decB, audioB)
	require.Len(t, resA.Segments, 2)
	require.Len(t, resB.Segments, 1)
	require.Equal(t, " Short.", resB.Segments[0].Text)

	writeScript(t, decA, decB) // rows begin their decodes in the same step: row 0 takes the first
	bm := loadBatchModel(t, dev, 2)
	require.Equal(t, 2, bm.Rows())
	require.Equal(t, []int{2}, bm.Sizes())
	opts.NMels = bm.NMels()
	got := lanes(t, bm, opts, audioA, audioB)
	require.Equal(t, resA, got[0])
	require.Equal(t, resB, got[1])
	require.Equal(t, max(stepsA, stepsB), bm.Steps(), "each step carries a token of every live lane")
	require.Less(t, bm.Steps(), stepsA+stepsB)
}

// TestBatchUnscriptedRowsKeepTheirStates: without a script each row's transcript comes from
// its own encoder states, over several windows of different counts, as at batch 1.
func TestBatchUnscriptedRowsKeepTheirStates(t *testing.T) {
	tok := largeV3(t)
	dev := openDevice(t)
	m := loadModel(t, dev)
	opts := transcribe.DefaultOptions()
	opts.NMels, opts.Language = m.NMels(), "en"
	loud := audio(35)
	for i := range loud {
		loud[i] *= 8
	}
	audios := [][]float32{audio(3), loud, audio(40), make([]float32, 20*16000)}
	var want []transcribe.Result
	texts := map[string]bool{}
	for _, x := range audios {
		res, err := transcribe.Transcribe(context.Background(), m, tok, x, opts, nil)
		require.NoError(t, err)
		want = append(want, res)
		texts[res.Text] = true
	}
	require.Greater(t, len(texts), 1, "the audios give different transcripts")
	bm := loadBatchModel(t, dev, 4)
	require.True(t, bm.Traced())
	got := lanes(t, bm, opts, audios...)
	for i := range audios {
		require.Equal(t, want[i], got[i], "row %d", i)
	}
}

// TestBatchTracesReplayed: one encoder trace per row and one decoder-step trace, captured at
// load and replayed after (no new trace, tensor or program while serving); all freed on Close.
func TestBatchTracesReplayed(t *testing.T) {
	dev := openDevice(t)
	before, err := ttnn.Counts()
	require.NoError(t, err)
	bm, err := LoadBatchModel(context.Background(), dev, ttnn.SimPrograms(), 4)
	require.NoError(t, err)
	loaded, err := ttnn.Counts()
	require.NoError(t, err)
	require.Equal(t, uint64(4+1), loaded.Traces-before.Traces, "4 encoder traces and the b4 step's")
	require.Equal(t, uint64(2), loaded.Programs-before.Programs)
	opts := transcribe.DefaultOptions()
	opts.NMels, opts.Language = bm.NMels(), "en"
	lanes(t, bm, opts, audio(3), audio(35))
	lanes(t, bm, opts, audio(5))
	after, err := ttnn.Counts()
	require.NoError(t, err)
	require.Equal(t, loaded, after, "serving replays the traces: nothing captured or allocated")
	require.NoError(t, bm.Close())
	closed, err := ttnn.Counts()
	require.NoError(t, err)
	require.Equal(t, before, closed)
}

func TestBatchLaneErrors(t *testing.T) {
	tok := largeV3(t)
	dev := openDevice(t)
	bm := loadBatchModel(t, dev, 2)
	ctx := context.Background()
	mel := make([]float32, bm.NMels()*3000)
	l0, l1 := bm.Lane(0), bm.Lane(1)
	bm.Begin(0)
	defer bm.Finish(0)
	st, err := l0.Encode(ctx, mel, bm.NMels())
	require.NoError(t, err)
	_, err = l1.DecodeStep(ctx, st, []int{tok.SOT()}, 0)
	require.ErrorIs(t, err, ErrBadSequence, "another lane's state")
	_, err = l0.DecodeStep(ctx, st, []int{tok.SOT(), 50259}, 0)
	require.NoError(t, err)
	_, err = l0.DecodeStep(ctx, st, []int{50360}, 3)
	require.ErrorIs(t, err, ErrBadSequence, "a gap after 2 tokens")
	_, err = l0.DecodeStep(ctx, st, []int{tok.NVocab()}, 0)
	require.ErrorIs(t, err, ErrBadSequence)
	st2, err := l0.Encode(ctx, mel, bm.NMels())
	require.NoError(t, err)
	_, err = l0.DecodeStep(ctx, st, []int{tok.SOT()}, 0)
	require.ErrorIs(t, err, ErrStaleState)
	st1, err := l1.Encode(ctx, mel, bm.NMels())
	require.NoError(t, err)
	_, err = l1.DecodeStep(ctx, st1, []int{tok.SOT()}, 0)
	require.ErrorIs(t, err, ErrBadSequence, "lane 1 not begun")
	_, err = l0.DecodeStep(ctx, st2, []int{tok.SOT()}, 0)
	require.NoError(t, err, "lane 0 steps alone")
}

// TestBatchRunnerCancelOneLane: in one batch of a MAX_BATCH_SIZE 2 runner, a task cancelled
// after its first window stops while the other finishes with what it gives alone.
func TestBatchRunnerCancelOneLane(t *testing.T) {
	r := newRunner(t, func(c *Config) { c.MaxBatchSize = 2 })
	require.NotNil(t, r.batch)
	other := &runners.AudioRequest{Samples: audio(35), SampleRate: 16000, Duration: 35, Language: "en"}
	alone := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: other}})
	require.NoError(t, alone[0].Err)

	long := &runners.AudioRequest{Samples: make([]float32, 65*16000), SampleRate: 16000, Duration: 65, Language: "en"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var windows int
	cancelled := runners.Task{Ctx: ctx, Request: long, Progress: func(done, total int) {
		windows = done
		cancel()
	}}
	start := time.Now()
	out := r.Run(context.Background(), []runners.Task{cancelled, {Ctx: context.Background(), Request: other}})
	require.ErrorIs(t, out[0].Err, context.Canceled)
	require.Equal(t, 1, windows, "no window after the cancellation")
	require.NoError(t, out[1].Err)
	require.Equal(t, alone[0].Value, out[1].Value)
	require.Less(t, time.Since(start), time.Minute)

	// The batch context ends: every lane stops; the runner serves afterwards.
	bctx, bcancel := context.WithCancel(context.Background())
	bcancel()
	out = r.Run(bctx, []runners.Task{{Ctx: context.Background(), Request: long}, {Ctx: context.Background(), Request: other}})
	require.ErrorIs(t, out[0].Err, context.Canceled)
	require.ErrorIs(t, out[1].Err, context.Canceled)
	again := r.Run(context.Background(), []runners.Task{{Ctx: context.Background(), Request: other}, {Ctx: context.Background(), Request: other}, {Ctx: context.Background(), Request: other}})
	for _, o := range again {
		require.NoError(t, o.Err)
		require.Equal(t, alone[0].Value, o.Value)
	}
}

func TestConfigForMaxBatchSize(t *testing.T) {
	for _, n := range []int{1, 4} {
		c := configFor(runners.WorkerSpec{Settings: &config.Settings{MaxBatchSize: n, TraceRegionSize: config.DefaultTraceRegionSize}})
		require.Equal(t, n, c.MaxBatchSize)
	}
}
