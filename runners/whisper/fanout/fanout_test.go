package fanout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// request is a 16 kHz request of the given length whose sample i holds i (so a chunk's first
// sample tells where it was cut), with the given speech segments.
func request(seconds float64, segs ...runners.Span) *runners.AudioRequest {
	n := int(seconds * 16000)
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(i)
	}
	return &runners.AudioRequest{Samples: s, SampleRate: 16000, Duration: seconds, Segments: segs,
		Stream: true, Language: "de", Task: "translate", Prompt: "Namen", Temperature: 0.2}
}

func sp(a, b float64) runners.Span { return runners.Span{Start: a, End: b} }

func TestSplit(t *testing.T) {
	tests := []struct {
		name     string
		duration float64
		segs     []runners.Span
		max      float64
		// want: per chunk, its offset, duration and local segments.
		want []struct {
			off, dur float64
			segs     []runners.Span
		}
	}{
		{name: "no segments: nothing to split", duration: 60},
		{name: "one chunk", duration: 60, segs: []runners.Span{sp(1, 5), sp(6, 20)},
			want: []struct {
				off, dur float64
				segs     []runners.Span
			}{{1, 19, []runners.Span{sp(0, 4), sp(5, 19)}}}},
		{name: "exactly 30 s stays one chunk", duration: 60, segs: []runners.Span{sp(2, 10), sp(12, 32)},
			want: []struct {
				off, dur float64
				segs     []runners.Span
			}{{2, 30, []runners.Span{sp(0, 8), sp(10, 30)}}}},
		{name: "greedy along segments", duration: 100, segs: []runners.Span{sp(0, 10), sp(11, 25), sp(26, 40), sp(50, 55), sp(56, 90)},
			want: []struct {
				off, dur float64
				segs     []runners.Span
			}{
				{0, 25, []runners.Span{sp(0, 10), sp(11, 25)}},
				{26, 29, []runners.Span{sp(0, 14), sp(24, 29)}},
				{56, 34, []runners.Span{sp(0, 34)}}, // one segment over the limit: its own chunk
			}},
		{name: "smaller limit", duration: 20, segs: []runners.Span{sp(0, 4), sp(5, 9), sp(10, 14)}, max: 10,
			want: []struct {
				off, dur float64
				segs     []runners.Span
			}{{0, 9, []runners.Span{sp(0, 4), sp(5, 9)}}, {10, 4, []runners.Span{sp(0, 4)}}}},
		{name: "unsorted, clamped, empty dropped", duration: 40, segs: []runners.Span{sp(35, 45), sp(-1, 3), sp(7, 7), sp(4, 6)},
			want: []struct {
				off, dur float64
				segs     []runners.Span
			}{{0, 6, []runners.Span{sp(0, 3), sp(4, 6)}}, {35, 5, []runners.Span{sp(0, 5)}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := request(tc.duration, tc.segs...)
			plan := Split(req, tc.max, 1)
			require.Equal(t, tc.duration, plan.Duration)
			require.Len(t, plan.Chunks, len(tc.want))
			for i, w := range tc.want {
				c := plan.Chunks[i]
				require.InDelta(t, w.off, c.Offset, 1e-9, "chunk %d offset", i)
				require.InDelta(t, w.dur, c.Req.Duration, 1e-9, "chunk %d duration", i)
				require.InDelta(t, w.off+w.dur, c.End(), 1e-9)
				require.Len(t, c.Req.Segments, len(w.segs))
				for k, s := range w.segs {
					require.InDelta(t, s.Start, c.Req.Segments[k].Start, 1e-9, "chunk %d seg %d", i, k)
					require.InDelta(t, s.End, c.Req.Segments[k].End, 1e-9, "chunk %d seg %d", i, k)
				}
				require.Len(t, c.Req.Samples, int(w.dur*16000))
				require.Equal(t, float32(w.off*16000), c.Req.Samples[0], "chunk %d starts at the right sample", i)
				// The decoding options travel with every chunk.
				require.Equal(t, 16000, c.Req.SampleRate)
				require.True(t, c.Req.Stream)
				require.Equal(t, "de", c.Req.Language)
				require.Equal(t, "translate", c.Req.Task)
				require.Equal(t, "Namen", c.Req.Prompt)
				require.Equal(t, 0.2, c.Req.Temperature)
			}
		})
	}
}

// TestSplitBalancesForWorkers: with several workers the chunks are as many as the rounds the
// fewest chunks need anyway allow, and as even as the segments allow.
func TestSplitBalancesForWorkers(t *testing.T) {
	// 42 segments of 3 s every 4.2 s (175.2 s of audio), which greedy 30 s packing makes 6
	// chunks of 7 segments (28.2 s).
	var segs []runners.Span
	for i := range 42 {
		segs = append(segs, sp(4.2*float64(i), 4.2*float64(i)+3))
	}
	tests := []struct {
		workers int
		want    []int // segments per chunk
	}{
		{workers: 0, want: []int{7, 7, 7, 7, 7, 7}},
		{workers: 1, want: []int{7, 7, 7, 7, 7, 7}},
		{workers: 2, want: []int{7, 7, 7, 7, 7, 7}},          // 6 chunks: 3 rounds of 2 already
		{workers: 4, want: []int{6, 6, 6, 6, 6, 6, 6}},       // 2 rounds: up to 8 chunks; 6 segments each make 7
		{workers: 5, want: []int{5, 5, 5, 5, 5, 5, 5, 5, 2}}, // 2 rounds: up to 10 chunks
		{workers: 8, want: []int{6, 6, 6, 6, 6, 6, 6}},       // one round: 8 chunks at most, 7 even ones
		{workers: 64, want: slices.Repeat([]int{1}, 42)},     // more workers than segments: one each
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.workers, " workers"), func(t *testing.T) {
			plan := Split(request(180, segs...), 0, tc.workers)
			var got []int
			for _, c := range plan.Chunks {
				got = append(got, len(c.Req.Segments))
				require.LessOrEqual(t, c.Req.Duration, MaxChunkSeconds)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSplitSharesSamplesWithoutGrowing(t *testing.T) {
	req := request(70, sp(0, 20), sp(40, 60))
	plan := Split(req, 0, 1)
	require.Len(t, plan.Chunks, 2)
	first := plan.Chunks[0].Req.Samples
	require.Equal(t, len(first), cap(first), "an append to a chunk cannot reach into the next")
}

func TestMerge(t *testing.T) {
	plan := Plan{Duration: 95, Chunks: []Chunk{
		{Offset: 0, Req: &runners.AudioRequest{Duration: 25}},
		{Offset: 26.02, Req: &runners.AudioRequest{Duration: 29}},
		{Offset: 60, Req: &runners.AudioRequest{Duration: 30}},
	}}
	results := []*runners.TranscriptionResult{
		{Text: " Hello there. ", Task: "transcribe", Language: "english", Duration: 25, Speakers: []string{"SPEAKER_00"}, SpeakerCount: 1,
			Segments: []runners.TranscriptionSegment{
				{ID: 0, Speaker: "SPEAKER_00", StartTime: 0.5, EndTime: 3, Text: " Hello", Seek: 0, Tokens: []int{1, 2}, AvgLogprob: -0.2},
				{ID: 1, Speaker: "SPEAKER_00", StartTime: 3, EndTime: 24.98, Text: " there.", Seek: 0},
			}},
		{Text: "", Task: "transcribe", Language: "", Duration: 29}, // silence: no text, no segments
		{Text: "General Kenobi.", Task: "transcribe", Language: "english", Duration: 30, Speakers: []string{"SPEAKER_01", "SPEAKER_00"}, SpeakerCount: 2,
			Segments: []runners.TranscriptionSegment{
				{ID: 0, Speaker: "SPEAKER_01", StartTime: 0.1, EndTime: 2.3, Text: "General", Seek: 0, NoSpeechProb: 0.1},
				{ID: 7, Speaker: "SPEAKER_00", StartTime: 2.3, EndTime: 29.99, Text: "Kenobi.", Seek: 30},
			}},
	}
	got, err := plan.Merge(results)
	require.NoError(t, err)
	require.Equal(t, &runners.TranscriptionResult{
		Text: "Hello there. General Kenobi.", Task: "transcribe", Language: "english", Duration: 95,
		Speakers: []string{"SPEAKER_00", "SPEAKER_01"}, SpeakerCount: 2,
		Segments: []runners.TranscriptionSegment{
			{ID: 0, Speaker: "SPEAKER_00", StartTime: 0.5, EndTime: 3, Text: " Hello", Seek: 0, Tokens: []int{1, 2}, AvgLogprob: -0.2},
			{ID: 1, Speaker: "SPEAKER_00", StartTime: 3, EndTime: 24.98, Text: " there.", Seek: 0},
			{ID: 2, Speaker: "SPEAKER_01", StartTime: 60.1, EndTime: 62.3, Text: "General", Seek: 6000, NoSpeechProb: 0.1},
			{ID: 3, Speaker: "SPEAKER_00", StartTime: 62.3, EndTime: 89.99, Text: "Kenobi.", Seek: 6030},
		},
	}, got)
	// The inputs are not modified.
	require.Equal(t, 7, results[2].Segments[1].ID)

	_, err = plan.Merge(results[:2])
	require.Error(t, err)
	_, err = plan.Merge([]*runners.TranscriptionResult{results[0], nil, results[2]})
	require.ErrorIs(t, err, ErrBadResult)
}

func TestMergeRoundsRebasedTimes(t *testing.T) {
	plan := Plan{Duration: 40, Chunks: []Chunk{{Offset: 12.34, Req: &runners.AudioRequest{Duration: 20}}}}
	got, err := plan.Merge([]*runners.TranscriptionResult{{Text: "x", Segments: []runners.TranscriptionSegment{{StartTime: 0.02, EndTime: 1.1}}}})
	require.NoError(t, err)
	require.Equal(t, 12.36, got.Segments[0].StartTime) // not 12.360000000000001
	require.Equal(t, 13.44, got.Segments[0].EndTime)
	require.Nil(t, got.Speakers)
	require.Zero(t, got.SpeakerCount)
}

// fake is a scripted submit: each chunk (told apart by its offset in samples) waits for
// its release, streams its words, and answers; fail makes a chunk fail instead.
type fake struct {
	mu        sync.Mutex
	release   map[int]chan struct{}
	fail      map[int]error
	cancelled atomic.Int64 // chunks that ended because ctx was cancelled
	calls     atomic.Int64 // chunks submitted
	started   chan int
}

func newFake(n int) *fake {
	f := &fake{release: map[int]chan struct{}{}, fail: map[int]error{}, started: make(chan int, n)}
	for i := range n {
		f.release[i] = make(chan struct{})
	}
	return f
}

// index is the chunk's number: its first sample value / 16000 / 10 (chunks start at 0, 10, 20 s).
func index(req *runners.AudioRequest) int { return int(req.Samples[0]) / 16000 / 10 }

func (f *fake) submit(ctx context.Context, r runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
	req := r.(*runners.AudioRequest)
	i := index(req)
	f.calls.Add(1)
	f.started <- i
	select {
	case <-f.release[i]:
	case <-ctx.Done():
		f.cancelled.Add(1)
		return nil, context.Cause(ctx)
	}
	f.mu.Lock()
	err := f.fail[i]
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	words := []string{fmt.Sprintf("c%d-a", i), fmt.Sprintf("c%d-b", i)}
	if emit != nil {
		for k, w := range words {
			if err := emit(runners.TranscriptChunk{Text: w, ChunkID: k + 1}); err != nil {
				return nil, err
			}
		}
	}
	return &runners.TranscriptionResult{Text: strings.Join(words, " "), Task: "transcribe", Language: "english", Duration: req.Duration,
		Segments: []runners.TranscriptionSegment{{StartTime: 1, EndTime: 2, Text: words[0]}}}, nil
}

// plan3 is three chunks at 0, 10 and 20 s, all submitted at once.
func plan3() Plan {
	p := Split(request(30, sp(0, 5), sp(10, 15), sp(20, 25)), 9, 1)
	p.InFlight = 0
	return p
}

func TestRunMergesInOrder(t *testing.T) {
	plan := plan3()
	require.Len(t, plan.Chunks, 3)
	f := newFake(3)
	for _, i := range []int{2, 0, 1} { // finish out of order
		close(f.release[i])
	}
	res, err := Run(context.Background(), f.submit, plan, nil)
	require.NoError(t, err)
	require.Equal(t, "c0-a c0-b c1-a c1-b c2-a c2-b", res.Text)
	require.Len(t, res.Segments, 3)
	for i, s := range res.Segments {
		require.Equal(t, i, s.ID)
		require.Equal(t, float64(10*i+1), s.StartTime)
	}
}

func TestRunStreamsInOrder(t *testing.T) {
	plan := plan3()
	f := newFake(3)
	var got []runners.TranscriptChunk
	emitted := make(chan struct{}, 10)
	emit := func(v runners.Chunk) error {
		got = append(got, v.(runners.TranscriptChunk))
		emitted <- struct{}{}
		return nil
	}
	type outcome struct {
		res *runners.TranscriptionResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Run(context.Background(), f.submit, plan, emit)
		done <- outcome{res, err}
	}()
	for range 3 {
		<-f.started
	}
	// Chunks 2 and 1 finish first: nothing may be relayed while chunk 0 runs.
	close(f.release[2])
	close(f.release[1])
	select {
	case <-emitted:
		t.Fatal("a later chunk's output was relayed before the first chunk finished")
	case <-time.After(100 * time.Millisecond):
	}
	close(f.release[0])
	o := <-done
	require.NoError(t, o.err)
	var texts []string
	for i, c := range got {
		require.Equal(t, i+1, c.ChunkID, "chunk ids renumbered across the request")
		texts = append(texts, c.Text)
	}
	require.Equal(t, []string{"c0-a", "c0-b", "c1-a", "c1-b", "c2-a", "c2-b"}, texts)
	require.Equal(t, strings.Join(texts, " "), o.res.Text)
}

func TestRunStreamsHeadLive(t *testing.T) {
	// The first chunk's output is relayed while later chunks still run.
	plan := plan3()
	f := newFake(3)
	emitted := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), f.submit, plan, func(v runners.Chunk) error {
			emitted <- v.(runners.TranscriptChunk).Text
			return nil
		})
		done <- err
	}()
	close(f.release[0])
	require.Equal(t, "c0-a", <-emitted)
	require.Equal(t, "c0-b", <-emitted)
	select {
	case err := <-done:
		t.Fatalf("Run ended while chunks 1 and 2 were held: %v", err)
	default:
	}
	close(f.release[1])
	close(f.release[2])
	require.NoError(t, <-done)
}

func TestRunFailureCancelsTheRest(t *testing.T) {
	boom := errors.New("device on fire")
	tests := []struct {
		name   string
		stream bool
	}{{"non-streaming", false}, {"streaming", true}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := plan3()
			f := newFake(3)
			f.fail[1] = boom
			close(f.release[1]) // chunk 1 fails while 0 and 2 still run
			var relayed []any
			var emit func(runners.Chunk) error
			if tc.stream {
				emit = func(v runners.Chunk) error { relayed = append(relayed, v); return nil }
			}
			res, err := Run(context.Background(), f.submit, plan, emit)
			require.Nil(t, res)
			require.ErrorIs(t, err, boom)
			require.Contains(t, err.Error(), "chunk 2 of 3 (10.00-15.00 s)")
			// The other chunks were cancelled, or never submitted when the failure came first.
			require.Equal(t, f.calls.Load()-1, f.cancelled.Load())
			require.Empty(t, relayed)
		})
	}
}

func TestRunParentCancel(t *testing.T) {
	plan := plan3()
	f := newFake(3)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, f.submit, plan, nil)
		done <- err
	}()
	for range 3 {
		<-f.started
	}
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, int64(3), f.cancelled.Load())
}

func TestRunEmitErrorStops(t *testing.T) {
	plan := plan3()
	f := newFake(3)
	close(f.release[0])
	gone := errors.New("client gone")
	res, err := Run(context.Background(), f.submit, plan, func(runners.Chunk) error { return gone })
	require.Nil(t, res)
	require.ErrorIs(t, err, gone)
	require.Equal(t, f.calls.Load()-1, f.cancelled.Load(), "the chunks after the first were cancelled or never submitted")
}

func TestRunInFlight(t *testing.T) {
	tests := []struct{ inFlight, want int }{{0, 5}, {1, 1}, {2, 2}, {5, 5}, {9, 5}}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.inFlight), func(t *testing.T) {
			plan := Split(request(50, sp(0, 5), sp(10, 15), sp(20, 25), sp(30, 35), sp(40, 45)), 9, 1)
			plan.InFlight = tc.inFlight
			var now, peak atomic.Int64
			var order []int
			var mu sync.Mutex
			// The first jobs wait until as many as allowed are in flight (so the peak is
			// reached however slowly the goroutines start), then each holds a little longer
			// so that one over the limit would be seen.
			full, once := make(chan struct{}), sync.Once{}
			submit := func(ctx context.Context, r runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
				n := now.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				if n >= int64(tc.want) {
					once.Do(func() { close(full) })
				}
				mu.Lock()
				order = append(order, index(r.(*runners.AudioRequest)))
				mu.Unlock()
				<-full
				time.Sleep(5 * time.Millisecond)
				now.Add(-1)
				return &runners.TranscriptionResult{Text: "x"}, nil
			}
			res, err := Run(context.Background(), submit, plan, nil)
			require.NoError(t, err)
			require.Equal(t, "x x x x x", res.Text)
			require.Equal(t, int64(tc.want), peak.Load())
			if tc.inFlight == 1 {
				require.Equal(t, []int{0, 1, 2, 3, 4}, order, "one at a time: in file order")
			}
		})
	}
	require.Equal(t, 4, Split(request(50, sp(0, 5), sp(40, 45)), 9, 4).InFlight)
}

func TestRunBadResult(t *testing.T) {
	plan := plan3()
	submit := func(ctx context.Context, r runners.Request, emit func(runners.Chunk) error) (runners.Result, error) {
		if index(r.(*runners.AudioRequest)) == 2 {
			return &runners.ImageResult{}, nil // not a transcription
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	_, err := Run(context.Background(), submit, plan, nil)
	require.ErrorIs(t, err, ErrBadResult)
	_, err = Run(context.Background(), submit, Plan{}, nil)
	require.Error(t, err)
}

// countingRunner is a device-boundary fake for the real scheduler: it records every request
// that reached the device, and with failFirst fails the first one it runs.
type countingRunner struct {
	mu        *sync.Mutex
	ran       *[]int
	failFirst bool
	hold      time.Duration
}

func (r *countingRunner) Warmup(context.Context) error { return nil }
func (r *countingRunner) Close() error                 { return nil }
func (r *countingRunner) Run(ctx context.Context, tasks []runners.Task) []runners.Outcome {
	out := make([]runners.Outcome, len(tasks))
	for k, t := range tasks {
		req := t.Request.(*runners.AudioRequest)
		i := index(req)
		r.mu.Lock()
		*r.ran = append(*r.ran, i)
		first := len(*r.ran) == 1
		r.mu.Unlock()
		select {
		case <-time.After(r.hold):
		case <-t.Ctx.Done():
			out[k] = runners.Outcome{Err: t.Ctx.Err()}
			continue
		}
		if r.failFirst && first {
			out[k] = runners.Outcome{Err: errors.New("decoder diverged")}
			continue
		}
		out[k] = runners.Outcome{Value: &runners.TranscriptionResult{Text: fmt.Sprint(i), Duration: req.Duration}}
	}
	return out
}

// TestRunOnScheduler runs fan-out on the real scheduler: with one worker, when the chunk it
// runs first fails, the queued chunks leave the queue without ever reaching the device.
func TestRunOnScheduler(t *testing.T) {
	var mu sync.Mutex
	var ran []int
	newSched := func(t *testing.T, workers int, failFirst bool) *scheduler.Scheduler {
		var groups []config.DeviceGroup
		for w := range workers {
			groups = append(groups, config.DeviceGroup{ID: fmt.Sprint(w), Devices: []int{w}})
		}
		s := scheduler.New(scheduler.Config{Groups: groups, QueueSize: 16, MaxBatchSize: 1},
			func(config.DeviceGroup) (runners.Runner, error) {
				return &countingRunner{ran: &ran, failFirst: failFirst, hold: 20 * time.Millisecond, mu: &mu}, nil
			})
		s.Start(context.Background())
		t.Cleanup(func() { require.NoError(t, s.Stop(context.Background())) })
		require.Eventually(t, s.Ready, 5*time.Second, time.Millisecond)
		return s
	}
	plan := Split(request(60, sp(0, 5), sp(10, 15), sp(20, 25), sp(30, 35), sp(40, 45)), 9, 1)
	require.Len(t, plan.Chunks, 5)

	t.Run("all succeed", func(t *testing.T) {
		s := newSched(t, 2, false)
		res, err := Run(context.Background(), s.Submit, plan, nil)
		require.NoError(t, err)
		require.Equal(t, "0 1 2 3 4", res.Text)
	})
	t.Run("first chunk fails", func(t *testing.T) {
		mu.Lock()
		ran = nil
		mu.Unlock()
		s := newSched(t, 1, true)
		_, err := Run(context.Background(), s.Submit, plan, nil)
		require.ErrorContains(t, err, "decoder diverged")
		mu.Lock()
		require.Equal(t, []int{0}, ran, "one chunk in flight: the rest never reach the device")
		mu.Unlock()

		// All chunks queued at once: the worker may have taken the next chunk in the instant
		// before the cancel reached the queue; the rest leave the queue unrun.
		mu.Lock()
		ran = nil
		mu.Unlock()
		s = newSched(t, 1, true)
		all := plan
		all.InFlight = 0
		_, err = Run(context.Background(), s.Submit, all, nil)
		require.ErrorContains(t, err, "decoder diverged")
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, ran)
		require.LessOrEqual(t, len(ran), 2, "cancelled chunks reached the device: %v", ran)
	})
}

// FuzzSplitMerge checks Split and Merge together on arbitrary segment lists: every speech
// segment lands in exactly one chunk, in order; a chunk is within its limit unless it holds
// one longer segment; and a runner that echoes its segments back gets the file's own
// segment times from Merge (to the millisecond).
func FuzzSplitMerge(f *testing.F) {
	f.Add([]byte{10, 50, 60, 90, 95, 200, 210, 255}, uint8(4), 30.0)
	f.Add([]byte{0, 255}, uint8(1), 30.0)
	f.Add([]byte{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, uint8(8), 0.5)
	f.Add([]byte{200, 100, 50, 20}, uint8(0), 10.0)
	f.Fuzz(func(t *testing.T, raw []byte, workers uint8, maxSeconds float64) {
		if len(raw) > 400 || math.IsNaN(maxSeconds) || maxSeconds < 0.05 || maxSeconds > 100 {
			t.Skip()
		}
		const duration = 60.0
		var segs []runners.Span
		for i := 0; i+1 < len(raw); i += 2 {
			a, b := float64(raw[i])/255*duration, float64(raw[i+1])/255*duration
			segs = append(segs, sp(a, b))
		}
		req := &runners.AudioRequest{Samples: make([]float32, int(duration*16000)), SampleRate: 16000, Duration: duration, Segments: segs}
		plan := Split(req, maxSeconds, int(workers))
		var want []runners.Span
		for _, s := range segs {
			if s.End > s.Start {
				want = append(want, s)
			}
		}
		slices.SortStableFunc(want, func(a, b runners.Span) int { return cmp.Compare(a.Start, b.Start) })
		results := make([]*runners.TranscriptionResult, len(plan.Chunks))
		got := 0
		for i, c := range plan.Chunks {
			require.NotEmpty(t, c.Req.Segments)
			if len(c.Req.Segments) > 1 {
				require.LessOrEqual(t, c.Req.Duration, maxSeconds+2.0/16000, "chunk %d", i)
			}
			require.Equal(t, len(c.Req.Samples), int(math.Round(c.Req.Duration*16000)))
			r := &runners.TranscriptionResult{Text: fmt.Sprint(i)}
			for _, s := range c.Req.Segments {
				require.GreaterOrEqual(t, s.Start, 0.0)
				require.LessOrEqual(t, s.End, c.Req.Duration+1e-9)
				r.Segments = append(r.Segments, runners.TranscriptionSegment{StartTime: s.Start, EndTime: s.End})
				got++
			}
			results[i] = r
		}
		require.Equal(t, len(want), got, "every segment in exactly one chunk")
		if len(plan.Chunks) == 0 {
			return
		}
		merged, err := plan.Merge(results)
		require.NoError(t, err)
		require.Len(t, merged.Segments, len(want))
		for k, s := range merged.Segments {
			require.Equal(t, k, s.ID)
			require.InDelta(t, want[k].Start, s.StartTime, 1e-3+1.0/16000, "segment %d start", k)
			require.InDelta(t, want[k].End, s.EndTime, 1e-3+1.0/16000, "segment %d end", k)
		}
	})
}

// TestSplitStartsOnMelFrames: chunk offsets are whole 10 ms frames even when the speech
// segments' times are not, so a Seek re-based to the file is the frame a one-job run reports;
// every segment still lies inside its chunk.
func TestSplitStartsOnMelFrames(t *testing.T) {
	req := request(100, sp(0.0031, 20.1237), sp(33.06617, 52.00049), sp(61.2345, 88.8888))
	plan := Split(req, 0, 4)
	require.Greater(t, len(plan.Chunks), 1)
	for i, c := range plan.Chunks {
		frames := c.Offset * 100
		require.InDelta(t, math.Round(frames), frames, 1e-9, "chunk %d offset %v is not a whole frame", i, c.Offset)
		first := int(c.Req.Samples[0]) // request() numbers the samples
		require.Zero(t, first%160, "chunk %d starts at sample %d", i, first)
		for _, s := range c.Req.Segments {
			require.GreaterOrEqual(t, s.Start, 0.0)
			require.LessOrEqual(t, s.End, c.Req.Duration)
		}
	}
}
