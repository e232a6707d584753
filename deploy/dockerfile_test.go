package deploy

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/frontend/dockerfile/dockerfile2llb"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerui"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	digest "github.com/opencontainers/go-digest"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"
)

// offlineResolver answers every base-image lookup with an empty config, so linting never
// contacts a registry.
type offlineResolver struct{}

func (offlineResolver) ResolveImageConfig(_ context.Context, ref string, _ sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	return ref, "", []byte(`{"architecture":"amd64","os":"linux","config":{}}`), nil
}

// lintDockerfile runs BuildKit's Dockerfile linter (the rules of `docker build --check`) over
// all stages and returns the warnings as "Rule: detail (line N)" strings.
func lintDockerfile(t *testing.T, dt []byte) ([]string, error) {
	t.Helper()
	sm := llb.NewSourceMap(nil, "Dockerfile", "Dockerfile", dt)
	sm.Definition = &llb.Definition{} // AddSource dereferences it
	res, err := dockerfile2llb.DockerfileLint(context.Background(), dt, dockerfile2llb.ConvertOpt{
		Config:         dockerui.Config{},
		SourceMap:      sm,
		MetaResolver:   offlineResolver{},
		TargetPlatform: &ocispecs.Platform{OS: "linux", Architecture: "amd64"},
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, w := range res.Warnings {
		line := 0
		if w.Location != nil && len(w.Location.Ranges) > 0 {
			line = int(w.Location.Ranges[0].Start.Line)
		}
		out = append(out, fmt.Sprintf("%s: %s (line %d)", w.RuleName, w.Detail, line))
	}
	if res.Error != nil {
		return out, fmt.Errorf("lint: build error: %s", res.Error.Message)
	}
	return out, nil
}

func TestDockerfileLintClean(t *testing.T) {
	warnings, err := lintDockerfile(t, readRepoFile(t, "Dockerfile"))
	require.NoError(t, err)
	require.Empty(t, warnings, "docker build --check would report these")
}

// The linter harness must be able to fail: a Dockerfile with known defects is reported.
func TestDockerfileLintCatchesDefects(t *testing.T) {
	bad := []byte("from golang:1.26 as Build\nMAINTAINER someone\nENV SECRET_TOKEN abc\nWORKDIR src\nEXPOSE 8000/TCP\nCMD tt-media-server\n")
	warnings, err := lintDockerfile(t, bad)
	require.NoError(t, err)
	joined := strings.Join(warnings, "\n")
	for _, rule := range []string{"StageNameCasing", "MaintainerDeprecated", "ConsistentInstructionCasing",
		"LegacyKeyValueFormat", "SecretsUsedInArgOrEnv", "WorkdirRelativePath", "ExposeProtoCasing", "JSONArgsRecommended"} {
		require.Contains(t, joined, rule)
	}
}

type stageFacts struct {
	stage instructions.Stage
	run   []string // RUN command lines
	copy  []*instructions.CopyCommand
	user  string
	check *instructions.HealthCheckCommand
	ports []string
	entry []string
	// workdir is the last WORKDIR.
	workdir string
}

func parseStages(t *testing.T, dt []byte) []stageFacts {
	t.Helper()
	ast, err := parser.Parse(bytes.NewReader(dt))
	require.NoError(t, err)
	stages, _, err := instructions.Parse(ast.AST, linter.New(&linter.Config{}))
	require.NoError(t, err)
	var out []stageFacts
	for _, st := range stages {
		f := stageFacts{stage: st}
		for _, cmd := range st.Commands {
			switch c := cmd.(type) {
			case *instructions.RunCommand:
				f.run = append(f.run, strings.Join(c.CmdLine, " "))
			case *instructions.CopyCommand:
				f.copy = append(f.copy, c)
			case *instructions.UserCommand:
				f.user = c.User
			case *instructions.HealthCheckCommand:
				f.check = c
			case *instructions.ExposeCommand:
				f.ports = append(f.ports, c.Ports...)
			case *instructions.EntrypointCommand:
				f.entry = c.CmdLine
			case *instructions.WorkdirCommand:
				f.workdir = c.Path
			}
		}
		out = append(out, f)
	}
	return out
}

func TestDockerfileStages(t *testing.T) {
	stages := parseStages(t, readRepoFile(t, "Dockerfile"))
	byName := map[string]stageFacts{}
	var names []string
	for _, s := range stages {
		byName[s.stage.Name] = s
		names = append(names, s.stage.Name)
	}
	require.Equal(t, []string{"go-toolchain", "build-sim", "build-ttnn", "ttnn", "sim"}, names)
	require.Equal(t, "sim", names[len(names)-1], "plain `docker build .` must give the small sim image")

	sim, hw := byName["sim"], byName["ttnn"]
	// The sim server is a cgo build (the C simulator): it needs glibc, Debian 12's as the
	// golang:bookworm build stage, and the video service needs ffmpeg (libx264), which
	// distroless cannot carry: the sim image is debian:bookworm-slim with Debian's ffmpeg.
	require.Equal(t, "debian:bookworm-slim", sim.stage.BaseName, "sim base")
	require.Equal(t, "golang:${GO_VERSION}-bookworm", byName["go-toolchain"].stage.BaseName, "the build stage's Debian is the image's")
	simRun := strings.Join(sim.run, "\n")
	apt := regexp.MustCompile(`apt-get install -y --no-install-recommends ([a-z0-9. -]+)`).FindStringSubmatch(simRun)
	require.NotNil(t, apt, "the sim image installs its packages without recommends:\n%s", simRun)
	pkgs := strings.Fields(apt[1])
	require.ElementsMatch(t, []string{"ffmpeg", "libturbojpeg0", "libwebp7"}, pkgs,
		"ffmpeg for video MP4s (and AAC uploads, speech formats), the native image codecs; nothing else")
	require.Equal(t, 1, strings.Count(simRun, "apt-get install"), "one install, all without recommends")
	require.Contains(t, simRun, "rm -rf /var/lib/apt/lists/*", "the apt lists stay out of the image")
	// The server runs as 65532 in /app, where the video job store's default JOB_DATABASE_PATH
	// (./jobs.db) lives: the directory must be that user's, or MODEL_SERVICE=video cannot start.
	require.Equal(t, "65532:65532", sim.user)
	require.Equal(t, "/app", sim.workdir)
	require.Contains(t, simRun, "useradd --uid 65532 --gid 65532")
	require.Contains(t, simRun, "chown 65532:65532 /app")
	require.NotContains(t, simRun, "ENABLE_JOB_PERSISTENCE")
	require.Equal(t, "${TT_BASE_IMAGE}", hw.stage.BaseName)
	require.Equal(t, "${TT_BASE_IMAGE}", byName["build-ttnn"].stage.BaseName)

	for name, s := range map[string]stageFacts{"sim": sim, "ttnn": hw} {
		require.NotEmpty(t, s.user, "%s: USER", name)
		require.NotContains(t, []string{"0", "root", "0:0"}, s.user, "%s runs as root", name)
		require.NotNil(t, s.check, "%s: HEALTHCHECK", name)
		require.Equal(t, []string{"CMD", "/usr/local/bin/tt-healthcheck"}, s.check.Health.Test, "%s: probe", name)
		require.Positive(t, s.check.Health.StartPeriod, "%s: start period", name)
		require.Equal(t, []string{"8000/tcp"}, s.ports, "%s: EXPOSE", name)
		var copied []string
		for _, c := range s.copy {
			copied = append(copied, c.SourcePaths...)
		}
		require.Contains(t, copied, "/out/tt-healthcheck", "%s copies the probe", name)
		require.Contains(t, copied, "/out/tt-media-server", "%s copies the server", name)
	}
	require.Equal(t, []string{"/usr/local/bin/tt-media-server"}, sim.entry)
	require.Equal(t, []string{"/usr/local/bin/run_uvicorn_equivalent.sh"}, hw.entry)

	simBuild := strings.Join(byName["build-sim"].run, "\n")
	require.Contains(t, simBuild, "CGO_ENABLED=1 go build -trimpath -ldflags=\"-s -w\" -o /out/tt-media-server", "the sim image runs the C simulator")
	require.Contains(t, simBuild, "CGO_ENABLED=0 go build", "the health probe stays static")
	require.Contains(t, simBuild, "./cmd/tt-media-server")
	require.NotContains(t, simBuild, "-tags ttnn")
	hwBuild := strings.Join(byName["build-ttnn"].run, "\n")
	require.Contains(t, hwBuild, "CGO_ENABLED=1")
	require.Contains(t, hwBuild, "go build -tags ttnn")
	require.Contains(t, hwBuild, "libTTMLIRRuntime.so", "the base image is checked for a built runtime")
}

func loadDockerignore(t *testing.T) *patternmatcher.PatternMatcher {
	t.Helper()
	patterns, err := ignorefile.ReadAll(bytes.NewReader(readRepoFile(t, ".dockerignore")))
	require.NoError(t, err)
	pm, err := patternmatcher.New(patterns)
	require.NoError(t, err)
	return pm
}

var embedRE = regexp.MustCompile(`(?m)^//go:embed\s+(.+)$`)

// Every file the image builds need must reach the build context; junk must not.
func TestDockerignore(t *testing.T) {
	root := repoRoot(t)
	pm := loadDockerignore(t)
	excluded := func(rel string) bool {
		ok, err := pm.MatchesOrParentMatches(filepath.ToSlash(rel))
		require.NoError(t, err)
		return ok
	}
	var needed []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case rel == ".git", d.Name() == "node_modules":
				return fs.SkipDir
			case rel != "." && strings.HasPrefix(d.Name(), "."):
				return fs.SkipDir // the go tool ignores dot directories (.ci's scripts are not built)
			case rel == "deploy":
				return fs.SkipDir // its own module, not part of the server build
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") ||
			strings.HasSuffix(rel, ".c") || strings.HasSuffix(rel, ".cc") || strings.HasSuffix(rel, ".h") {
			needed = append(needed, rel)
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range embedRE.FindAllStringSubmatch(string(src), -1) {
				for _, pat := range strings.Fields(m[1]) {
					files, err := filepath.Glob(filepath.Join(filepath.Dir(path), pat))
					if err != nil {
						return err
					}
					for _, f := range files {
						r, _ := filepath.Rel(root, f)
						needed = append(needed, r)
					}
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	needed = append(needed, "go.mod", "go.sum", "run_uvicorn_equivalent.sh",
		"deploy/healthcheck/go.mod", "deploy/healthcheck/main.go")
	require.Greater(t, len(needed), 20)
	for _, rel := range needed {
		require.False(t, excluded(rel), "%s is needed by the image build but .dockerignore excludes it", rel)
	}
	for _, rel := range []string{".git/config", "tt-media-server", "deploy/bin/helm", "mock.test", "server/x.test", ".env"} {
		require.True(t, excluded(rel), "%s should be kept out of the build context", rel)
	}
	// The healthcheck module must stay dependency-free so the image build needs no network
	// beyond the main module's `go mod download`.
	gomod := string(readRepoFile(t, "deploy/healthcheck/go.mod"))
	require.NotContains(t, gomod, "require", "deploy/healthcheck must not have dependencies")
	require.False(t, slices.Contains(needed, "deploy/go.mod"))
}
