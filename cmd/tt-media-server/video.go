package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/tenstorrent/tt-media-server-go/config"
	"github.com/tenstorrent/tt-media-server-go/jobs"
	"github.com/tenstorrent/tt-media-server-go/media/video"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/server"
)

// openVideoJobs prepares a video pool's durable side: it refuses to start without ffmpeg
// (libx264), opens the job store (JOB_DATABASE_URL's PostgreSQL, else the SQLite file
// JOB_DATABASE_PATH, in memory with ENABLE_JOB_PERSISTENCE=false) and the result directory
// TT_VIDEO_OUTPUT_DIR, fails the jobs this replica left unfinished, removes orphaned files, and
// starts the retention and stuck-job sweep. nil without a video pool.
func openVideoJobs(ctx context.Context, s *config.Settings, pools []server.Pool, log *slog.Logger) (*server.VideoJobs, func(), error) {
	found := false
	for _, p := range pools {
		found = found || p.Service == runners.ServiceVideo
	}
	if !found {
		return nil, func() {}, nil
	}
	if err := video.Check(ctx); err != nil {
		return nil, nil, fmt.Errorf("the video service needs ffmpeg with libx264 to encode MP4s: %w", err)
	}
	v := s.Video
	url := v.DatabasePath
	switch {
	case v.DatabaseURL != "":
		url = v.DatabaseURL
	case !v.Persistence:
		url = ":memory:"
	}
	store, err := jobs.Open(ctx, url)
	if err != nil {
		return nil, nil, fmt.Errorf("job database (JOB_DATABASE_URL / JOB_DATABASE_PATH): %w", err)
	}
	files, err := jobs.NewFiles(v.OutputDir)
	if err != nil {
		_ = store.Close()
		return nil, nil, fmt.Errorf("TT_VIDEO_OUTPUT_DIR: %w", err)
	}
	m := &jobs.Maintainer{Store: store, Files: files, Owner: v.ReplicaID, Prefix: "video_", Retention: v.Retention,
		Stuck: v.MaxStuck, Interval: v.CleanupInterval, Log: log}
	if err := m.Recover(ctx); err != nil {
		_ = store.Close()
		return nil, nil, fmt.Errorf("video jobs at start-up: %w", err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	go m.Run(mctx)
	log.Info("video jobs", "database", map[bool]string{true: "postgresql", false: "sqlite"}[jobs.IsPostgres(url)],
		"output_dir", v.OutputDir, "replica", v.ReplicaID, "persistent", v.Persistence)
	return &server.VideoJobs{Store: store, Files: files}, func() { cancel(); _ = store.Close() }, nil
}
