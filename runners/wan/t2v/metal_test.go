//go:build cgo && ttnn

package t2v

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tenstorrent/tt-media-server-go/internal/childtest"
	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
	"github.com/tenstorrent/tt-media-server-go/ttnn/ttnnfile"
)

// TestMetalWan runs TestChildMetalWan in a child process: the metal backend must be the first
// and only backend its process selects (this package's TestMain selects the simulator).
func TestMetalWan(t *testing.T) {
	if _, ok := ttnn.FakeRuntime(); !ok {
		t.Skip("metal is linked against a real tt::runtime: this test runs over the fake (scripts/check-metal.sh)")
	}
	testTokenizer(t) // skips (or fails under CI=true), before the child runs, without the goldens
	childtest.Run(t, "TestChildMetalWan")
}

// Tiny Wan2.2 programs for running a clip over the fake runtime (whose outputs are filled on the
// host: the declared 832x480 VAE output is 97M values per chip shard). Everything but the sizes
// is the declaration's: names, meshes, functions, dtypes, layouts, the 512 UMT5 ids.
const (
	tinyFrames, tinyHeight, tinyWidth = 9, 32, 48
	tinyTextDim                       = 32
)

// tinyDecl are the declarations at the tiny size.
var tinyDecl = ShrunkDeclarations(programs.Lookup, tinyFrames, tinyHeight, tinyWidth, tinyTextDim)

// wanFiles writes the .ttnn files of the program sets the test needs, each file once (flatc
// runs per file): the experts traced as tt-mlir's trace pass makes them (capture on the first
// run, replay after).
type wanFiles struct {
	t    *testing.T
	sets map[string]string
}

func traced(name string) bool {
	return strings.HasSuffix(name, "-transformer") || strings.HasSuffix(name, "-transformer-2")
}

// set is the directory of prefix's four programs written from decl (tiny: tinyDecl, else the
// declarations).
func (f *wanFiles) set(prefix string, tiny bool) string {
	key := fmt.Sprint(prefix, tiny)
	if dir, ok := f.sets[key]; ok {
		return dir
	}
	decl := Declarations(programs.Lookup)
	if tiny {
		decl = tinyDecl
	}
	dir := f.t.TempDir()
	require.NoError(f.t, ttnnfile.WriteDeclared(context.Background(), ttnnfile.SDKDir(), dir, ProgramNames(prefix), decl, ttnnfile.Fixture{Traced: traced}))
	f.sets[key] = dir
	return dir
}

// changed is prefix's declared set with program name written from a changed declaration (mod)
// or, when mod is nil, missing.
func (f *wanFiles) changed(t *testing.T, prefix, name string, mod func(*ttnn.ProgramSpec)) string {
	good, dir := f.set(prefix, false), t.TempDir()
	for _, n := range ProgramNames(prefix) {
		if n != name {
			require.NoError(t, os.Symlink(programs.MetalPath(good, n), programs.MetalPath(dir, n)))
		}
	}
	if mod != nil {
		require.NoError(t, ttnnfile.WriteDeclared(context.Background(), ttnnfile.SDKDir(), dir, []string{name}, programs.Lookup,
			ttnnfile.Fixture{Traced: traced, Mod: func(_ string, s *ttnn.ProgramSpec) { mod(s) }}))
	}
	return dir
}

// openMetal opens a mesh with Wan2.2's device options (the catalogue's: L1 small 32768, one
// command queue, 1-D fabric) and closes it at the end, checking that nothing was left behind.
func openMetal(t *testing.T, mesh ttnn.MeshShape) *ttnn.Device {
	t.Helper()
	ids := make([]int, mesh.Chips())
	for i := range ids {
		ids[i] = i
	}
	dev, err := ttnn.Open(context.Background(), ttnn.Options{Mesh: mesh, DeviceIDs: ids, L1SmallSize: 32768,
		TraceRegionSize: 50_000_000, CommandQueues: 1, Fabric: ttnn.Fabric1D, ProgramCache: true})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, dev.Close())
		st, _ := ttnn.FakeRuntime()
		require.Zero(t, st.DeviceBuffers, "no device buffer left")
		require.Zero(t, st.Traces, "every trace released")
		require.Zero(t, st.MeshesOpen)
		require.Zero(t, st.BuffersLeakedAtClose+st.TracesLeakedAtClose)
	})
	return dev
}

var (
	t3k    = ttnn.MeshShape{Rows: 2, Cols: 4}
	galaxy = ttnn.MeshShape{Rows: 4, Cols: 8}
)

func TestChildMetalWan(t *testing.T) {
	if os.Getenv(childtest.Env) != t.Name() {
		t.Skip("runs only as a child process (of TestMetalWan)")
	}
	if err := ttnnfile.Available(ttnnfile.SDKDir()); err != nil {
		t.Fatalf("the .ttnn fixtures need flatc and the SDK: %v", err)
	}
	t.Setenv("MOCK_DEVICES_COUNT", "32") // a Galaxy's chips (the fake reads it at each open)
	require.NoError(t, ttnn.Init("metal"))
	ctx := context.Background()
	files := &wanFiles{t: t, sets: map[string]string{}}

	t.Run("the declared programs load on the declared mesh", func(t *testing.T) {
		for _, tc := range []struct {
			prefix string
			mesh   ttnn.MeshShape
			frames int
			w, h   int
		}{{Prefix480, t3k, 81, 832, 480}, {Prefix720, galaxy, 81, 1280, 720}} {
			t.Run(tc.prefix, func(t *testing.T) {
				dev := openMetal(t, tc.mesh)
				d, err := NewMetalDevice(ctx, dev, files.set(tc.prefix, false), tc.prefix, programs.Lookup)
				require.NoError(t, err)
				sh, err := ShapeFor(tc.frames, tc.h, tc.w)
				require.NoError(t, err)
				require.Equal(t, Spec{Shape: sh, TextLen: 512, TextDim: 4096}, d.Spec())
				st, _ := ttnn.FakeRuntime()
				require.Equal(t, tc.mesh, st.LastMesh, "opened on the declared mesh")
				require.Len(t, st.LastDeviceIDs, tc.mesh.Chips())
				require.NoError(t, d.Close())
			})
		}
	})

	t.Run("a program that differs from its declaration stops start-up with one line", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			mesh ttnn.MeshShape
			dir  func(t *testing.T) string
			want string
		}{
			{"a VAE of 80 frames", t3k, func(t *testing.T) string {
				return files.changed(t, Prefix480, "wan22-t2v-vae", func(s *ttnn.ProgramSpec) { s.Functions[0].Outputs[0].Shape[2] = 80 })
			}, "program does not match its declaration: program wan22-t2v-vae (DIR/wan22-t2v-vae.ttnn): " +
				"function decode: output 0 (video): shape [1,3,80,480,832] in the file, [1,3,81,480,832] declared"},
			{"a low-noise expert taking f32 latents", t3k, func(t *testing.T) string {
				return files.changed(t, Prefix480, "wan22-t2v-transformer-2", func(s *ttnn.ProgramSpec) { s.Functions[0].Inputs[0].DType = ttnn.F32 })
			}, "program does not match its declaration: program wan22-t2v-transformer-2 (DIR/wan22-t2v-transformer-2.ttnn): " +
				"function forward: input 0 (hidden_states): dtype f32 in the file, bf16 declared"},
			{"the T3K set on a Galaxy", galaxy, func(*testing.T) string { return files.set(Prefix480, false) },
				"wan2.2 on metal: program wan22-t2v-text-encoder is declared for a 2x4 mesh; this worker's device is 4x8 (DEVICE_MESH_SHAPE, DEVICE_IDS)"},
			{"no VAE", t3k, func(t *testing.T) string { return files.changed(t, Prefix480, "wan22-t2v-vae", nil) },
				"wan2.2 on metal: MODEL_WEIGHTS_PATH has no wan22-t2v-vae.ttnn"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				dev := openMetal(t, tc.mesh)
				dir := tc.dir(t)
				_, err := NewMetalDevice(ctx, dev, dir, Prefix480, programs.Lookup)
				require.ErrorIs(t, err, runners.ErrConfig, "the worker fails at once instead of retrying")
				require.NotContains(t, err.Error(), "\n")
				if want, ok := strings.CutPrefix(tc.want, "program does not match"); ok {
					require.ErrorIs(t, err, ttnn.ErrContract)
					require.EqualError(t, err, "program does not match"+strings.ReplaceAll(want, "DIR", dir))
				} else {
					require.ErrorContains(t, err, tc.want)
				}
				c, err := ttnn.Counts()
				require.NoError(t, err)
				require.Zero(t, c.Programs+c.Tensors, "a refused set is freed")
			})
		}
	})

	t.Run("a short clip: UMT5 twice, one expert per step switching at the boundary, traced, the VAE once", func(t *testing.T) {
		tok := testTokenizer(t)
		for _, tc := range []struct {
			prefix string
			mesh   ttnn.MeshShape
		}{{Prefix480, t3k}, {Prefix720, galaxy}} {
			t.Run(tc.prefix, func(t *testing.T) {
				dev := openMetal(t, tc.mesh)
				d, err := NewMetalDevice(ctx, dev, files.set(tc.prefix, true), tc.prefix, tinyDecl)
				require.NoError(t, err)
				defer func() { require.NoError(t, d.Close()) }()
				sh, err := ShapeFor(tinyFrames, tinyHeight, tinyWidth)
				require.NoError(t, err)
				require.Equal(t, Spec{Shape: sh, TextLen: 512, TextDim: tinyTextDim}, d.Spec())
				p, err := New(d, tok, Wan22Config())
				require.NoError(t, err)

				const steps = 4
				sched, err := Wan22Config().Sampler.Schedule(steps)
				require.NoError(t, err)
				high := 0
				for _, ts := range sched.Timesteps {
					if ts >= 875 { // boundary_ratio 0.875 of 1000 training timesteps
						high++
					}
				}
				require.True(t, high > 0 && high < steps, "the schedule crosses the boundary: %v", sched.Timesteps)
				req := Request{Prompt: "a red fox running in the snow", NegativePrompt: "static, blurred", Steps: steps, Seed: 7}
				var first [][]byte
				for run := range 2 {
					before, _ := ttnn.FakeRuntime()
					_, from, ok := ttnn.FakeSubmits(^uint64(0))
					require.True(t, ok)
					frames, err := p.Generate(ctx, req, Hooks{})
					require.NoError(t, err)
					after, _ := ttnn.FakeRuntime()
					log, _, _ := ttnn.FakeSubmits(from)
					checkReceived(t, log, tc.prefix, tc.mesh, sh, sched.Timesteps, run == 0)
					require.Len(t, frames, tinyFrames)
					require.Len(t, frames[0], tinyWidth*tinyHeight*3)
					require.Equal(t, TTNNStats{Encodes: 2 * (run + 1), Runs: [3]int{HighNoise: 2 * high * (run + 1), LowNoise: 2 * (steps - high) * (run + 1)},
						VAEs: run + 1}, d.Stats(), "run %d: the prompt and the negative prompt encoded, each step's expert twice (CFG), the VAE once", run)
					require.Equal(t, uint64(2+2*steps+1), after.Submits-before.Submits, "run %d: program runs", run)
					captured, replayed := after.TracesCaptured-before.TracesCaptured, after.TracesReplayed-before.TracesReplayed
					if run == 0 {
						require.Equal(t, uint64(2), captured, "each expert captures its step's trace on its first run")
						require.Equal(t, uint64(2*steps-2), replayed, "and replays it on every later run")
						first = frames
					} else {
						require.Zero(t, captured, "a second clip captures nothing")
						require.Equal(t, uint64(2*steps), replayed, "a second clip replays every expert run")
						require.Equal(t, first, frames, "the fake's outputs hash the inputs: the same request, the same clip")
					}
					t.Logf("%s run %d on %v: %d program runs, %d traces captured, %d replayed", tc.prefix, run, tc.mesh,
						after.Submits-before.Submits, captured, replayed)
				}
			})
		}
	})
}

// checkReceived checks what the fake runtime received for one clip of a set on mesh: the UMT5
// encoder twice (prompt, then negative prompt: different ids), then per step two runs of the
// expert the timestep picks (t >= 875: the high-noise one) on the same latents and timestep,
// conditioned on the prompt's states and then on the negative prompt's (the same two states at
// every step), and the VAE once on the last latents; every input with its declared dtype,
// layout and shape, every run on the worker's own mesh. first: the clip is the first on this
// device, so each expert's first run captures its trace (every other expert run replays it).
func checkReceived(t *testing.T, log []ttnn.FakeSubmit, prefix string, mesh ttnn.MeshShape, sh Shape, timesteps []int64, first bool) {
	t.Helper()
	require.Len(t, log, 2+2*len(timesteps)+1, "program runs of one clip")
	lat := []int{1, LatentChannels, sh.LatentFrames, sh.LatentHeight, sh.LatentWidth}
	in := func(dtype string, tile bool, shape ...int) ttnn.FakeInput {
		return ttnn.FakeInput{DType: dtype, Tile: tile, Shape: shape}
	}
	run := func(i int, file, program string, trace ttnn.FakeTrace, want ...ttnn.FakeInput) ttnn.FakeSubmit {
		t.Helper()
		got := log[i]
		require.Equal(t, file+".ttnn", got.File, "run %d", i)
		require.Equal(t, program, got.Program, "run %d", i)
		require.Equal(t, mesh, got.Mesh, "run %d on the worker's mesh", i)
		require.False(t, got.Submesh, "run %d: the worker's device is its own root mesh", i)
		require.Equal(t, trace, got.Trace, "run %d (%s)", i, file)
		shapes := make([]ttnn.FakeInput, len(got.Inputs))
		for k, g := range got.Inputs {
			shapes[k] = in(g.DType, g.Tile, g.Shape...)
		}
		require.Equal(t, want, shapes, "run %d (%s): the inputs' dtypes, layouts and shapes", i, file)
		return got
	}
	ids := in("Int32", false, 1, 512)
	cond := run(0, prefix+"-text-encoder", "encode", ttnn.FakeTraceNone, ids, ids)
	uncond := run(1, prefix+"-text-encoder", "encode", ttnn.FakeTraceNone, ids, ids)
	require.NotEqual(t, cond.Inputs[0].Hash, uncond.Inputs[0].Hash, "the prompt, then the negative prompt")
	captured := map[string]bool{}
	var condText, uncondText, prevLatents, prevTimestep uint64
	for k, ts := range timesteps {
		expert := prefix + "-transformer"
		if ts < 875 {
			expert += "-2"
		}
		step := []ttnn.FakeInput{in("BFloat16", true, lat...), in("Float32", false, 1), in("BFloat16", true, 1, 512, tinyTextDim)}
		trace := ttnn.FakeTraceReplayed
		if first && !captured[expert] {
			trace, captured[expert] = ttnn.FakeTraceCaptured, true
		}
		c := run(2+2*k, expert, "forward", trace, step...)
		u := run(3+2*k, expert, "forward", ttnn.FakeTraceReplayed, step...)
		require.Equal(t, c.Inputs[0].Hash, u.Inputs[0].Hash, "step %d: both runs on the same latents", k)
		require.Equal(t, c.Inputs[1].Hash, u.Inputs[1].Hash, "step %d: at the same timestep", k)
		require.NotEqual(t, c.Inputs[2].Hash, u.Inputs[2].Hash, "step %d: conditional, then unconditional (CFG)", k)
		require.NotEqual(t, prevLatents, c.Inputs[0].Hash, "step %d: the latents moved", k)
		require.NotEqual(t, prevTimestep, c.Inputs[1].Hash, "step %d: the timestep moved", k)
		require.Equal(t, fakeHash(binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(ts)))), c.Inputs[1].Hash,
			"step %d: the schedule's timestep as f32 (%d)", k, ts)
		if k == 0 {
			condText, uncondText = c.Inputs[2].Hash, u.Inputs[2].Hash
		}
		require.Equal(t, condText, c.Inputs[2].Hash, "step %d: the prompt's states, encoded once", k)
		require.Equal(t, uncondText, u.Inputs[2].Hash, "step %d: the negative prompt's states, encoded once", k)
		prevLatents, prevTimestep = c.Inputs[0].Hash, c.Inputs[1].Hash
	}
	vae := run(len(log)-1, prefix+"-vae", "decode", ttnn.FakeTraceNone, in("BFloat16", true, lat...))
	require.NotEqual(t, prevLatents, vae.Inputs[0].Hash, "the VAE decodes the last step's result")
}

// fakeHash is the fake runtime's submit-log hash of a small tensor's bytes (tt_fake_runtime.h):
// FNV-1a over 8-byte little-endian words, then the tail bytes, of the size and the bytes.
func fakeHash(b []byte) uint64 {
	const prime = 1099511628211
	h := uint64(1469598103934665603)
	h = (h ^ uint64(len(b))) * prime
	i := 0
	for ; i+8 <= len(b); i += 8 {
		h = (h ^ binary.LittleEndian.Uint64(b[i:])) * prime
	}
	for ; i < len(b); i++ {
		h = (h ^ uint64(b[i])) * prime
	}
	return h
}
