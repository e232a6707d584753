// Package fanout spreads one long transcription over an audio pool's workers; it is the
// Whisper family's, not the scheduler's (which knows jobs and workers, not models). It splits the
// audio into chunks of at most 30 s along the speech segments pre-processing found, runs each
// chunk as its own scheduler job (so idle workers take them in parallel and busy ones queue
// them under the request's deadline and client), relays streamed output in chunk order, and
// merges the chunk results into one transcription with times re-based to the whole file.
// It knows audio requests and transcription results, not HTTP and not devices.
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

	"github.com/tenstorrent/tt-media-server-go/runners"
)

// MaxChunkSeconds is the longest chunk Split makes from several speech segments: Whisper's
// window. A single segment longer than this (pre-processing never makes one) is a chunk of
// its own, which the runner then decodes as long-form audio.
const MaxChunkSeconds = 30.0

// framesPerSecond is Whisper's mel frame rate: a segment's Seek counts these frames.
const framesPerSecond = 100

// ErrBadResult: a chunk job answered something other than a transcription.
var ErrBadResult = errors.New("chunk job returned no transcription")

// Chunk is one piece of a fanned-out request: its place in the whole file and the request
// that transcribes it (its own samples, its speech segments re-based to the chunk).
type Chunk struct {
	// Offset is where the chunk's first sample lies in the whole file, in seconds; chunk
	// times plus Offset are file times.
	Offset float64
	Req    *runners.AudioRequest
}

// End is where the chunk ends in the whole file, in seconds.
func (c Chunk) End() float64 { return c.Offset + c.Req.Duration }

// Plan is a request split into chunks, in file order.
type Plan struct {
	// Duration of the whole file in seconds (the merged result's duration).
	Duration float64
	Chunks   []Chunk
	// InFlight is how many chunk jobs Run keeps submitted at once (0: all of them). Split sets
	// it to the number of workers: more could not run at once anyway, and a long request
	// then holds only that many queue slots (MAX_QUEUE_SIZE, MAX_QUEUE_PER_CLIENT).
	InFlight int
}

// Split groups req's speech segments, in order, into chunks whose audio (from the first
// segment's start to the last one's end) lasts at most maxSeconds (MaxChunkSeconds when
// maxSeconds <= 0). Each chunk's request carries the samples of that stretch, its segments
// re-based to the stretch, and req's other fields (Stream, Language, Task, Prompt,
// Temperature) unchanged; the samples are shared with req, not copied. Segments are clamped
// to the audio; empty ones are dropped. A request without segments (pre-processing off) gives
// a plan without chunks: there is nothing to split along.
//
// workers is how many workers will share the chunks. With one, chunks are packed greedily
// (the fewest chunks). With more, the fewest chunks take ceil(n/workers) rounds of the
// workers anyway, so Split makes up to rounds×workers chunks instead, as even in length as
// the segments allow (the smallest limit at which greedy packing needs no more chunks than
// that): seven greedy chunks on four workers become eight of about 7/8 the length, and the
// last round is no longer one worker alone. The chunking, and so the exact chunk
// boundaries the runner sees, therefore depends on the number of workers, never on load.
func Split(req *runners.AudioRequest, maxSeconds float64, workers int) Plan {
	if maxSeconds <= 0 {
		maxSeconds = MaxChunkSeconds
	}
	rate := req.SampleRate
	if rate <= 0 {
		rate = 16000
	}
	duration := req.Duration
	if duration <= 0 {
		duration = float64(len(req.Samples)) / float64(rate)
	}
	plan := Plan{Duration: duration, InFlight: max(workers, 0)}
	segs := make([]runners.Span, 0, len(req.Segments))
	for _, s := range req.Segments {
		s.Start, s.End = max(s.Start, 0), min(s.End, duration)
		if s.End > s.Start {
			segs = append(segs, s)
		}
	}
	slices.SortStableFunc(segs, func(a, b runners.Span) int { return cmp.Compare(a.Start, b.Start) })
	limit := balancedLimit(segs, maxSeconds, workers)
	pack(segs, limit, func(i, j int, end float64) {
		plan.Chunks = append(plan.Chunks, makeChunk(req, rate, segs[i].Start, end, segs[i:j]))
	})
	return plan
}

// pack groups sorted segs greedily into runs whose span is at most limit (a segment longer
// than limit is a run of its own), calling chunk with each run [i, j) and its end.
func pack(segs []runners.Span, limit float64, chunk func(i, j int, end float64)) int {
	n := 0
	for i := 0; i < len(segs); {
		j := i + 1
		end := segs[i].End
		for j < len(segs) && max(end, segs[j].End)-segs[i].Start <= limit {
			end = max(end, segs[j].End)
			j++
		}
		if chunk != nil {
			chunk(i, j, end)
		}
		n++
		i = j
	}
	return n
}

// balancedLimit is the chunk length limit for workers: maxSeconds for one worker or when
// one chunk does; otherwise the smallest limit (to 10 ms) at which greedy packing makes no
// more than rounds×workers chunks, rounds being what the fewest chunks need.
func balancedLimit(segs []runners.Span, maxSeconds float64, workers int) float64 {
	fewest := pack(segs, maxSeconds, nil)
	if workers <= 1 || fewest <= 1 {
		return maxSeconds
	}
	target := (fewest + workers - 1) / workers * workers
	lo, hi := 0.0, maxSeconds // pack(lo) > target >= pack(hi)
	for hi-lo > 0.01 {
		mid := (lo + hi) / 2
		if pack(segs, mid, nil) <= target {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// makeChunk builds the chunk over [start, end) s of req's audio holding segs.
func makeChunk(req *runners.AudioRequest, rate int, start, end float64, segs []runners.Span) Chunk {
	n := len(req.Samples)
	lo := min(n, max(0, int(math.Floor(start*float64(rate)))))
	if hop := rate / 100; hop > 0 && rate%100 == 0 {
		// Start on a 10 ms mel-frame boundary (Whisper's hop): the chunk's offset is then a
		// whole number of frames, so a segment's Seek re-based by Merge is the same frame the
		// one-job run reports, whatever the speech segments' times are.
		lo -= lo % hop
	}
	hi := min(n, max(lo, int(math.Ceil(end*float64(rate)))))
	off := float64(lo) / float64(rate)
	length := float64(hi-lo) / float64(rate)
	local := make([]runners.Span, len(segs))
	for k, s := range segs {
		local[k] = runners.Span{Start: clamp(s.Start-off, length), End: clamp(s.End-off, length)}
	}
	return Chunk{Offset: off, Req: &runners.AudioRequest{
		Samples:     req.Samples[lo:hi:hi],
		SampleRate:  rate,
		Duration:    length,
		Segments:    local,
		Stream:      req.Stream,
		Language:    req.Language,
		Task:        req.Task,
		Prompt:      req.Prompt,
		Temperature: req.Temperature,
		Decode:      req.Decode,
	}}
}

func clamp(x, hi float64) float64 { return min(max(x, 0), hi) }

// Merge joins the chunk results, one per chunk in plan order, into the whole file's
// transcription: segments in order, their ids renumbered from 0, start and end times (and
// Seek, in mel frames) re-based to the file with times rounded to the millisecond; the text
// is the chunks' trimmed texts joined by single spaces (empty ones skipped), as the runners
// join their segments; task and language are the first chunk's that has one; speakers are
// the union, sorted. Duration is the whole file's.
func (p Plan) Merge(results []*runners.TranscriptionResult) (*runners.TranscriptionResult, error) {
	if len(results) != len(p.Chunks) {
		return nil, fmt.Errorf("fanout: %d results for %d chunks", len(results), len(p.Chunks))
	}
	out := &runners.TranscriptionResult{Duration: p.Duration}
	texts := make([]string, 0, len(results))
	var speakers []string
	for i, r := range results {
		if r == nil {
			return nil, fmt.Errorf("fanout: chunk %d of %d: %w", i+1, len(results), ErrBadResult)
		}
		off := p.Chunks[i].Offset
		if out.Task == "" {
			out.Task = r.Task
		}
		if out.Language == "" {
			out.Language = r.Language
		}
		if t := strings.TrimSpace(r.Text); t != "" {
			texts = append(texts, t)
		}
		for _, s := range r.Segments {
			s.ID = len(out.Segments)
			s.StartTime = roundMS(s.StartTime + off)
			s.EndTime = roundMS(s.EndTime + off)
			s.Seek += int(math.Round(off * framesPerSecond))
			out.Segments = append(out.Segments, s)
		}
		for _, sp := range r.Speakers {
			if !slices.Contains(speakers, sp) {
				speakers = append(speakers, sp)
			}
		}
	}
	out.Text = strings.Join(texts, " ")
	if len(speakers) > 0 {
		slices.Sort(speakers)
		out.Speakers, out.SpeakerCount = speakers, len(speakers)
	}
	return out, nil
}

func roundMS(x float64) float64 { return math.Round(x*1000) / 1000 }

// SubmitFunc runs one job to its terminal outcome: scheduler.Scheduler.Submit.
type SubmitFunc func(ctx context.Context, req runners.Request, emit func(runners.Chunk) error) (runners.Result, error)

// chunkState is what one chunk job has produced so far.
type chunkState struct {
	items []runners.Chunk // streamed items not yet relayed
	done  bool
	res   *runners.TranscriptionResult
}

// Run submits every chunk of plan as its own job, in file order and at most plan.InFlight at
// a time (all at once when it is 0), and returns the merged transcription. The jobs run
// under ctx, so they share the request's deadline, client and cancellation.
//
// emit, when not nil, receives the streamed items of the chunks on the calling goroutine,
// in file order: a chunk's items flow as soon as every earlier chunk has finished (the first
// chunk's flow at once), those of later chunks wait in memory until then. TranscriptChunk
// ids are renumbered 1, 2, ... across the whole request. When emit returns an error (the
// client is gone) Run stops.
//
// The first failure (a chunk job's error, a refused admission, ctx's end, or emit's error)
// cancels every other chunk job: queued ones leave the queue without device time, running
// ones stop at their runner's next step boundary. Run waits for all of them to end and
// returns that one error, wrapped with the chunk it came from; nothing is relayed after it.
func Run(ctx context.Context, submit SubmitFunc, plan Plan, emit func(runners.Chunk) error) (*runners.TranscriptionResult, error) {
	n := len(plan.Chunks)
	if n == 0 {
		return nil, errors.New("fanout: empty plan")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var (
		mu     sync.Mutex
		states = make([]chunkState, n)
		failed error
		wake   = make(chan struct{}, 1)
		wg     sync.WaitGroup
	)
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	fail := func(err error) {
		mu.Lock()
		first := failed == nil
		if first {
			failed = err
		}
		mu.Unlock()
		if first {
			cancel(err)
		}
		signal()
	}
	// Chunks are handed to the scheduler in file order: each goroutine takes its in-flight
	// slot and starts its Submit after the previous one has, so that a busy pool usually
	// queues them in order and the first chunk (whose output streams first) runs first. The
	// scheduler gives no "queued" signal, so with several in flight the queue order is
	// likely, not guaranteed; the merge does not need it. A chunk whose turn comes after a
	// failure is not submitted at all.
	prev := make(chan struct{})
	close(prev)
	var slots chan struct{} // nil: no limit
	if plan.InFlight > 0 && plan.InFlight < n {
		slots = make(chan struct{}, plan.InFlight)
	}
	for i, ch := range plan.Chunks {
		var chunkEmit func(runners.Chunk) error
		if emit != nil {
			chunkEmit = func(item runners.Chunk) error {
				mu.Lock()
				states[i].items = append(states[i].items, item)
				mu.Unlock()
				signal()
				return nil
			}
		}
		after, started := prev, make(chan struct{})
		prev = started
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-after
			if slots != nil {
				select {
				case slots <- struct{}{}:
					defer func() { <-slots }()
				case <-ctx.Done():
				}
			}
			close(started)
			if ctx.Err() != nil { // the request ended while this chunk waited for its turn
				fail(fmt.Errorf("chunk %d of %d (%.2f-%.2f s) not started: %w", i+1, n, ch.Offset, ch.End(), context.Cause(ctx)))
				return
			}
			v, err := submit(ctx, ch.Req, chunkEmit)
			res, ok := runners.ResultAs[*runners.TranscriptionResult](v)
			if err == nil && (!ok || res == nil) {
				err = fmt.Errorf("%w (got %T)", ErrBadResult, v)
			}
			if err != nil {
				fail(fmt.Errorf("chunk %d of %d (%.2f-%.2f s): %w", i+1, n, ch.Offset, ch.End(), err))
				return
			}
			mu.Lock()
			states[i].done, states[i].res = true, res
			mu.Unlock()
			signal()
		}()
	}

	head, chunkID := 0, 0
	var out []runners.Chunk
	for {
		mu.Lock()
		err := failed
		out = out[:0]
		for err == nil && head < n {
			st := &states[head]
			out = append(out, st.items...)
			st.items = nil
			if !st.done {
				break
			}
			head++
		}
		mu.Unlock()
		if err != nil {
			wg.Wait()
			return nil, err
		}
		for _, item := range out {
			if tc, ok := runners.ChunkAs[runners.TranscriptChunk](item); ok {
				chunkID++
				tc.ChunkID = chunkID
				item = tc
			}
			if err := emit(item); err != nil {
				fail(fmt.Errorf("fanout: relaying streamed output: %w", err))
				wg.Wait()
				return nil, failedErr(&mu, &failed)
			}
		}
		if head == n {
			break
		}
		<-wake
	}
	wg.Wait()
	results := make([]*runners.TranscriptionResult, n)
	for i := range states {
		results[i] = states[i].res
	}
	return plan.Merge(results)
}

func failedErr(mu *sync.Mutex, failed *error) error {
	mu.Lock()
	defer mu.Unlock()
	return *failed
}
