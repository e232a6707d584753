package config

import (
	"os"
	"strings"
	"time"
)

// videoEnv holds the video service's settings: HEAD's job settings (MAX_JOBS,
// JOB_CLEANUP_INTERVAL_SECONDS, JOB_RETENTION_SECONDS, JOB_MAX_STUCK_TIME_SECONDS,
// ENABLE_JOB_PERSISTENCE, JOB_DATABASE_PATH), USE_ASYNC_VIDEO and the video exporter's
// TT_VIDEO_OUTPUT_DIR / TT_VIDEO_EXPORT_CRF / TT_VIDEO_EXPORT_PRESET, plus ours.
type videoEnv struct {
	MaxJobs          envInt     `envconfig:"MAX_JOBS" default:"10000"`
	CleanupInterval  envSeconds `envconfig:"JOB_CLEANUP_INTERVAL_SECONDS" default:"300"`
	Retention        envSeconds `envconfig:"JOB_RETENTION_SECONDS" default:"86400"`
	MaxStuck         envSeconds `envconfig:"JOB_MAX_STUCK_TIME_SECONDS" default:"10800"`
	Persistence      envBool    `envconfig:"ENABLE_JOB_PERSISTENCE" default:"true"`
	DatabasePath     string     `envconfig:"JOB_DATABASE_PATH" default:"./jobs.db"`
	DatabaseURL      string     `envconfig:"JOB_DATABASE_URL"`
	ReplicaID        string     `envconfig:"JOB_REPLICA_ID"`
	AsyncVideo       envBool    `envconfig:"USE_ASYNC_VIDEO" default:"true"`
	OutputDir        string     `envconfig:"TT_VIDEO_OUTPUT_DIR" default:"/tmp/videos"`
	CRF              envInt     `envconfig:"TT_VIDEO_EXPORT_CRF" default:"23"`
	Preset           string     `envconfig:"TT_VIDEO_EXPORT_PRESET" default:"veryfast"`
	EncodeTimeout    envSeconds `envconfig:"VIDEO_ENCODE_TIMEOUT_SECONDS" default:"600"`
	MockVideoScale   envInt     `envconfig:"MOCK_VIDEO_SCALE" default:"1"`
	MaxVideoUpload   envInt     `envconfig:"MAX_VIDEO_IMAGE_BYTES" default:"10485760"`
	PollAfterMillis  envInt     `envconfig:"VIDEO_POLL_AFTER_MS" default:"2000"`
	VideoJobsTimeout envSeconds `envconfig:"VIDEO_JOB_TIMEOUT_SECONDS" default:"0"`
}

// VideoSettings configure the video service (MODEL_SERVICE=video): its job store, result
// files and encoder.
type VideoSettings struct {
	MaxJobs         int           // MAX_JOBS (10000): stored jobs; more are refused 429
	CleanupInterval time.Duration // JOB_CLEANUP_INTERVAL_SECONDS (300): the sweep's period
	Retention       time.Duration // JOB_RETENTION_SECONDS (86400): finished jobs and their files are deleted after this
	MaxStuck        time.Duration // JOB_MAX_STUCK_TIME_SECONDS (10800): unfinished jobs without a heartbeat this long fail
	// Persistence is ENABLE_JOB_PERSISTENCE (true here; HEAD's default is false): false keeps
	// the jobs in an in-memory SQLite database, lost (with their files) at a restart.
	Persistence  bool
	DatabasePath string // JOB_DATABASE_PATH (./jobs.db): the SQLite file
	// DatabaseURL is JOB_DATABASE_URL: a postgres:// URL puts the jobs in PostgreSQL, shared
	// by every replica of a deployment (replaces JOB_DATABASE_PATH).
	DatabaseURL string
	// ReplicaID is JOB_REPLICA_ID (default: the host name): the replica's name on its jobs. A
	// restarted replica fails the unfinished jobs of its own name.
	ReplicaID     string
	Async         bool          // USE_ASYNC_VIDEO (true): false answers each request with the MP4 itself
	OutputDir     string        // TT_VIDEO_OUTPUT_DIR (/tmp/videos): the result files
	CRF           int           // TT_VIDEO_EXPORT_CRF (23), 0-51
	Preset        string        // TT_VIDEO_EXPORT_PRESET (veryfast): x264's preset
	EncodeTimeout time.Duration // VIDEO_ENCODE_TIMEOUT_SECONDS (600): one MP4 encode's limit
	// MockScale is MOCK_VIDEO_SCALE (1): mock-device mode renders frames at 1/MockScale of the
	// model's size (the frame count and rate stay), so tests and demos encode small clips.
	MockScale     int
	MaxImageBytes int64         // MAX_VIDEO_IMAGE_BYTES (10 MiB, HEAD's upload cap): one I2V image
	PollAfter     time.Duration // VIDEO_POLL_AFTER_MS (2000): the openai-poll-after-ms hint on job reads
	JobTimeout    time.Duration // VIDEO_JOB_TIMEOUT_SECONDS (0: none): a job's device time limit
}

var x264Presets = []string{"ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"}

func loadVideo(s *Settings, lookup func(string) (string, bool)) error {
	var v videoEnv
	if err := processVars(lookup, &v); err != nil {
		return err
	}
	vs := VideoSettings{MaxJobs: int(v.MaxJobs), CleanupInterval: time.Duration(v.CleanupInterval),
		Retention: time.Duration(v.Retention), MaxStuck: time.Duration(v.MaxStuck), Persistence: bool(v.Persistence),
		DatabasePath: strings.TrimSpace(v.DatabasePath), DatabaseURL: strings.TrimSpace(v.DatabaseURL),
		ReplicaID: strings.TrimSpace(v.ReplicaID), Async: bool(v.AsyncVideo), OutputDir: strings.TrimSpace(v.OutputDir),
		CRF: int(v.CRF), Preset: strings.ToLower(strings.TrimSpace(v.Preset)), EncodeTimeout: time.Duration(v.EncodeTimeout),
		MockScale: int(v.MockVideoScale), MaxImageBytes: int64(v.MaxVideoUpload),
		PollAfter: time.Duration(v.PollAfterMillis) * time.Millisecond, JobTimeout: time.Duration(v.VideoJobsTimeout)}
	switch {
	case vs.MaxJobs < 1:
		return invalid("MAX_JOBS", itoa(vs.MaxJobs), "must be at least 1")
	case vs.CleanupInterval <= 0:
		return invalid("JOB_CLEANUP_INTERVAL_SECONDS", secs(vs.CleanupInterval), "must be a number of seconds > 0")
	case vs.Retention <= 0:
		return invalid("JOB_RETENTION_SECONDS", secs(vs.Retention), "must be a number of seconds > 0")
	case vs.MaxStuck <= 0:
		return invalid("JOB_MAX_STUCK_TIME_SECONDS", secs(vs.MaxStuck), "must be a number of seconds > 0")
	case vs.DatabasePath == "":
		return invalid("JOB_DATABASE_PATH", v.DatabasePath, "must name a file")
	case vs.DatabaseURL != "" && !strings.HasPrefix(vs.DatabaseURL, "postgres://") && !strings.HasPrefix(vs.DatabaseURL, "postgresql://"):
		return invalid("JOB_DATABASE_URL", "(redacted)", "must be a postgres:// or postgresql:// URL")
	case vs.DatabaseURL != "" && !vs.Persistence:
		return invalid("ENABLE_JOB_PERSISTENCE", "false", "JOB_DATABASE_URL is set: a shared PostgreSQL database is persistence")
	case vs.OutputDir == "":
		return invalid("TT_VIDEO_OUTPUT_DIR", v.OutputDir, "must name a directory")
	case vs.CRF < 0 || vs.CRF > 51:
		return invalid("TT_VIDEO_EXPORT_CRF", itoa(vs.CRF), "must be 0-51")
	case !contains(x264Presets, vs.Preset):
		return invalid("TT_VIDEO_EXPORT_PRESET", v.Preset, "accepted: %s", strings.Join(x264Presets, ", "))
	case vs.EncodeTimeout <= 0:
		return invalid("VIDEO_ENCODE_TIMEOUT_SECONDS", secs(vs.EncodeTimeout), "must be a number of seconds > 0")
	case vs.MockScale < 1 || vs.MockScale > 16:
		return invalid("MOCK_VIDEO_SCALE", itoa(vs.MockScale), "must be 1-16")
	case vs.MaxImageBytes < 1:
		return invalid("MAX_VIDEO_IMAGE_BYTES", itoa(int(vs.MaxImageBytes)), "must be at least 1")
	case vs.PollAfter < 0:
		return invalid("VIDEO_POLL_AFTER_MS", itoa(int(v.PollAfterMillis)), "must be >= 0")
	case vs.JobTimeout < 0:
		return negative("VIDEO_JOB_TIMEOUT_SECONDS", vs.JobTimeout)
	}
	if vs.ReplicaID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "replica"
		}
		vs.ReplicaID = host
	}
	s.Video = vs
	return nil
}

// videoRedacted adds the video settings to Redacted's map (JOB_DATABASE_URL may hold a
// password: only whether it is set).
func (s *Settings) videoRedacted(m map[string]any) {
	v := s.Video
	m["MAX_JOBS"] = v.MaxJobs
	m["JOB_CLEANUP_INTERVAL_SECONDS"] = v.CleanupInterval.Seconds()
	m["JOB_RETENTION_SECONDS"] = v.Retention.Seconds()
	m["JOB_MAX_STUCK_TIME_SECONDS"] = v.MaxStuck.Seconds()
	m["ENABLE_JOB_PERSISTENCE"] = v.Persistence
	m["JOB_DATABASE_PATH"] = v.DatabasePath
	m["JOB_DATABASE_URL"] = redact(v.DatabaseURL)
	m["JOB_REPLICA_ID"] = v.ReplicaID
	m["USE_ASYNC_VIDEO"] = v.Async
	m["TT_VIDEO_OUTPUT_DIR"] = v.OutputDir
	m["TT_VIDEO_EXPORT_CRF"] = v.CRF
	m["TT_VIDEO_EXPORT_PRESET"] = v.Preset
	m["VIDEO_ENCODE_TIMEOUT_SECONDS"] = v.EncodeTimeout.Seconds()
	m["MOCK_VIDEO_SCALE"] = v.MockScale
	m["MAX_VIDEO_IMAGE_BYTES"] = v.MaxImageBytes
	m["VIDEO_POLL_AFTER_MS"] = v.PollAfter.Milliseconds()
	m["VIDEO_JOB_TIMEOUT_SECONDS"] = v.JobTimeout.Seconds()
}
