package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/tenstorrent/tt-media-server-go/jobs"
	"github.com/tenstorrent/tt-media-server-go/media/video"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/scheduler"
)

// VideoJobs is the video service's durable side: the job store and the result files
// (cmd/tt-media-server opens them; jobs.Open, jobs.NewFiles).
type VideoJobs struct {
	Store jobs.Store
	Files *jobs.Files
}

// videoParams are a job's public request parameters (stored as the job's Params; never
// image payloads, only their frame positions).
type videoParams struct {
	Prompt         string `json:"prompt"`
	NegativePrompt string `json:"negative_prompt,omitempty"`
	Steps          int    `json:"num_inference_steps"`
	Seed           int64  `json:"seed"`
	// SeedGenerated says the server drew the seed (the client sent none).
	SeedGenerated   bool   `json:"seed_generated,omitempty"`
	FramePositions  []int  `json:"image_frame_positions,omitempty"`
	AspectRatio     string `json:"aspect_ratio,omitempty"`
	DurationSeconds int    `json:"duration_seconds,omitempty"`
	Width           int    `json:"width"`
	Height          int    `json:"height"`
	Frames          int    `json:"num_frames"`
	FPS             int    `json:"fps"`
	// Seconds and Size are the OpenAI dialect's spelling of the clip (its Video object).
	Seconds string `json:"seconds"`
	Size    string `json:"size"`
}

// videoRunner runs this replica's video jobs: it submits each to the video pool's scheduler,
// records progress (in_progress only once a device takes it; off the device's goroutine, see
// jobs.Progress), encodes the MP4, thumbnail and
// spritesheet, and completes or fails the job. A job cancelled or deleted elsewhere (another
// replica) is noticed at its next progress update or heartbeat and stopped.
type videoRunner struct {
	store  jobs.Store
	files  *jobs.Files
	sched  Scheduler
	owner  string
	opts   video.Options
	log    *slog.Logger
	encode func(ctx context.Context, path string, f video.Frames, o video.Options) error
	// wantAudio: the model makes a soundtrack, so an MP4 its runner encoded must carry one.
	wantAudio bool

	mu      sync.Mutex
	running map[string]context.CancelFunc
	// freed is closed (and replaced) whenever a job leaves the scheduler, i.e. a queue place
	// may have opened; jobs refused for a full queue wait on it (guarded by mu).
	freed chan struct{}
	wg    sync.WaitGroup
	// done, when set (tests), is told each job's final state.
	done func(id string, st jobs.State)
}

// videoIDPrefix starts every video job id (OpenAI's are video_…).
const videoIDPrefix = "video"

// start stores job as queued and runs it in the background; it fails at once with
// jobs.ErrTooMany when MAX_JOBS jobs are stored.
func (v *videoRunner) start(ctx context.Context, job *jobs.Job, req *runners.VideoRequest, maxJobs int) error {
	if err := v.store.Create(ctx, job, maxJobs); err != nil {
		return err
	}
	jctx, cancel := context.WithCancel(scheduler.WithClient(context.Background(), job.Client))
	v.mu.Lock()
	v.running[job.ID] = cancel
	v.mu.Unlock()
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		defer cancel()
		st := v.run(jctx, job.ID, req)
		v.mu.Lock()
		delete(v.running, job.ID)
		v.mu.Unlock()
		if v.done != nil {
			v.done(job.ID, st)
		}
	}()
	return nil
}

// stop cancels a job this replica is running (a no-op for others: they notice at their next
// step or heartbeat).
func (v *videoRunner) stop(id string) {
	v.mu.Lock()
	cancel := v.running[id]
	v.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// watch is the heartbeat: every interval it keeps this replica's jobs alive in the store and
// stops those cancelled or deleted elsewhere.
func (v *videoRunner) watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := v.store.Touch(ctx, v.owner); err != nil && ctx.Err() == nil {
			v.log.Warn("video job heartbeat failed", "err", err)
		}
		v.mu.Lock()
		ids := make([]string, 0, len(v.running))
		for id := range v.running {
			ids = append(ids, id)
		}
		v.mu.Unlock()
		for _, id := range ids {
			j, err := v.store.Get(ctx, id)
			if errors.Is(err, jobs.ErrNotFound) || (err == nil && j.Status.Terminal()) {
				v.stop(id)
			}
		}
	}
}

// shutdown cancels every running job; they are failed as interrupted.
func (v *videoRunner) shutdown() {
	v.mu.Lock()
	for _, cancel := range v.running {
		cancel()
	}
	v.mu.Unlock()
	v.wg.Wait()
}

// run takes one job to its end and returns its final state.
func (v *videoRunner) run(ctx context.Context, id string, req *runners.VideoRequest) jobs.State {
	bg := context.WithoutCancel(ctx)
	// The device's emit never waits on the store: progress.Set only records the newest
	// percent and answers a write refused earlier (cancelled or deleted elsewhere) as
	// jobs.ErrStopped; a local cancel stops the device through ctx at its next step.
	progress := jobs.NewProgress(bg, v.store, id)
	emit := func(c runners.Chunk) error {
		p, ok := runners.ChunkAs[runners.VideoProgress](c)
		if !ok {
			return nil
		}
		return progress.Set(p.Done * 99 / max(p.Total, 1)) // 100 once the MP4 is stored
	}
	res, err := v.submit(ctx, req, emit)
	// Every start and progress write lands before the job's final state is written.
	started, werr := progress.Flush()
	if err == nil && werr != nil && !errors.Is(werr, jobs.ErrStopped) {
		v.log.Warn("video job progress could not be stored", "job", id, "err", werr)
	}
	if err != nil {
		return v.finishFailed(bg, id, err, ctx.Err() != nil)
	}
	clip, ok := runners.ResultAs[*runners.VideoResult](res)
	if !ok || clip == nil {
		return v.fail(bg, id, jobs.CodeProcessing, fmt.Sprintf("the runner returned %T, not a video", res))
	}
	if clip.File != "" { // the runner's own MP4: adopted below, or removed on any other path
		defer func() { _ = os.Remove(clip.File) }()
	}
	if errors.Is(werr, jobs.ErrStopped) { // cancelled or deleted elsewhere during the last steps
		return v.finishFailed(bg, id, werr, false)
	}
	if !started { // a runner that tells no progress (or whose start write failed): the device has taken it all the same
		if ok, err := v.store.Start(bg, id); err != nil || !ok {
			return v.state(bg, id)
		}
	}
	if err := v.store.Touch(bg, v.owner); err != nil {
		v.log.Warn("video job heartbeat failed", "err", err)
	}
	var name string
	if clip.File != "" {
		name, err = v.adopt(ctx, id, req, clip)
	} else {
		name, err = v.encodeFrames(ctx, id, clip)
	}
	if err != nil {
		_ = v.files.Remove(id)
		if ctx.Err() != nil {
			return v.state(bg, id)
		}
		code := jobs.CodeProcessing
		var pe *os.PathError
		if errors.As(err, &pe) || errors.Is(err, os.ErrPermission) {
			code = jobs.CodeStorage
		}
		return v.fail(bg, id, code, "the video could not be stored: "+err.Error())
	}
	if ok, err := v.store.Complete(bg, id, name); err != nil || !ok {
		_ = v.files.Remove(id) // cancelled or deleted meanwhile: no file outlives its job
		return v.state(bg, id)
	}
	return jobs.Completed
}

// submit hands the job to the video pool's scheduler. An accepted job is never lost to a
// burst: while the scheduler's queue (MAX_QUEUE_SIZE, or the client's share of it) is full,
// the job stays queued in the store and is submitted again as soon as another job leaves the
// scheduler, or ends when it is cancelled or the server stops.
func (v *videoRunner) submit(ctx context.Context, req *runners.VideoRequest, emit func(runners.Chunk) error) (runners.Result, error) {
	for {
		freed := v.slotFreed()
		res, err := v.sched.Submit(ctx, req, emit)
		if !errors.Is(err, scheduler.ErrQueueFull) && !errors.Is(err, scheduler.ErrClientQueueFull) {
			v.signalFreed()
			return res, err
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for a place in the queue: %w", ctx.Err())
		}
	}
}

// slotFreed is the channel the next signalFreed closes.
func (v *videoRunner) slotFreed() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.freed == nil {
		v.freed = make(chan struct{})
	}
	return v.freed
}

// signalFreed wakes every job waiting for a queue place.
func (v *videoRunner) signalFreed() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.freed != nil {
		close(v.freed)
		v.freed = nil
	}
}

// encodeFrames stores a clip of frames as the job's MP4, thumbnail and spritesheet.
func (v *videoRunner) encodeFrames(ctx context.Context, id string, clip *runners.VideoResult) (string, error) {
	frames := video.Frames{Width: clip.Width, Height: clip.Height, FPS: clip.FPS, Frames: clip.Frames}
	if a := clip.Audio; a != nil { // a text-to-audio-video model's soundtrack, muxed as AAC
		frames.Audio = &video.Audio{SampleRate: a.SampleRate, Channels: a.Channels, Samples: a.Samples}
	}
	name, err := v.files.WritePath(id, "mp4", func(path string) error { return v.encode(ctx, path, frames, v.opts) })
	if err == nil {
		err = v.writeStill(id, "thumbnail.webp", func() ([]byte, error) { return video.Thumbnail(frames) })
	}
	if err == nil {
		err = v.writeStill(id, "spritesheet.webp", func() ([]byte, error) { return video.Spritesheet(frames) })
	}
	return name, err
}

func (v *videoRunner) writeStill(id, variant string, make func() ([]byte, error)) error {
	b, err := make()
	if err != nil {
		return err
	}
	_, err = v.files.Write(id, variant, func(w io.Writer) error { _, err := w.Write(b); return err })
	return err
}

// finishFailed ends a job whose scheduler submission failed: a cancelled job keeps its state
// (cancelled, or gone when deleted); anything else fails it.
func (v *videoRunner) finishFailed(ctx context.Context, id string, err error, cancelled bool) jobs.State {
	if cancelled || errors.Is(err, jobs.ErrStopped) {
		if st := v.state(ctx, id); st.Terminal() || st == "" {
			return st
		}
		return v.fail(ctx, id, jobs.CodeInterrupted, "the server stopped before the job finished")
	}
	return v.fail(ctx, id, jobs.CodeProcessing, err.Error())
}

func (v *videoRunner) fail(ctx context.Context, id, code, msg string) jobs.State {
	if _, err := v.store.Fail(ctx, id, code, msg); err != nil {
		v.log.Warn("video job could not be marked failed", "job", id, "err", err)
	}
	return v.state(ctx, id)
}

func (v *videoRunner) state(ctx context.Context, id string) jobs.State {
	j, err := v.store.Get(ctx, id)
	if err != nil {
		return ""
	}
	return j.Status
}

// paramsOf decodes a job's stored parameters.
func paramsOf(j jobs.Job) videoParams {
	var p videoParams
	_ = json.Unmarshal(j.Params, &p)
	return p
}
