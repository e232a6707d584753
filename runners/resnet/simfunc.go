package resnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tenstorrent/tt-media-server-go/runners"
	"github.com/tenstorrent/tt-media-server-go/runners/catalogue"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// SimProgram is the simulator's ResNet-50 program (ttnn/programs/resnet50.ttbsim): one
// forward of a batch of 16 bf16 images to 16×1000 float32 logits in 3.404 ms, 4,700 img/s.
const SimProgram = "resnet50"

// demo is ResNet-50's catalogue entry: the device options of tt-metal's ResNet-50 demo.
var demo, _ = runners.Lookup(catalogue.RunnerResNet, nil)

// Device options of tt-metal's ResNet-50 demo, which the device adapters open with (from the
// runners' catalogue).
var (
	L1SmallSize     = demo.Device.L1SmallSize
	TraceRegionSize = demo.Device.TraceRegionSize
	CommandQueues   = demo.Device.CommandQueues
)

// simFunc is the simulator's resnet50 forward as the adapters run it: the batch manifest cut
// into a per-image function (batch dimension 1, a sixteenth of the batch latency and trace
// bytes) that a trace runs once per batch slot, so that each image's logits are derived by the
// simulator from that image's own input and do not depend on the other images of its batch.
// A replay of the trace costs the manifest's batch latency whatever the number of real images.
type simFunc struct {
	name, fn     string
	batch        int           // images per device batch (the manifest's leading dimension)
	batchLatency time.Duration // unscaled simulator time of one device batch
	traceBytes   int           // captured command bytes of one device batch
	in, out      ttnn.TensorDesc
	manifest     string // the per-image manifest, with a "mesh" line placeholder
}

// loadSimFunc reads SimProgram from the embedded manifests and checks that it is a ResNet-50
// forward: one bf16 input [B,3,224,224], one float32 output [B,1000].
func loadSimFunc() (*simFunc, error) {
	src, err := fs.ReadFile(ttnn.SimPrograms(), SimProgram+".ttbsim")
	if err != nil {
		return nil, fmt.Errorf("sim program %s: %w", SimProgram, err)
	}
	return parseSimFunc(string(src))
}

func parseSimFunc(src string) (*simFunc, error) {
	f := &simFunc{}
	var latencyMS float64
	var ins, outs []ttnn.TensorDesc
	var lines []string
	for _, raw := range strings.Split(src, "\n") {
		l := raw
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		fields := strings.Fields(l)
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "name":
			if len(fields) == 2 {
				f.name = fields[1]
			}
		case "func":
			if f.fn != "" {
				return nil, fmt.Errorf("sim program %s: more than one function", SimProgram)
			}
			if len(fields) == 2 {
				f.fn = fields[1]
			}
		case "latency_ms":
			if len(fields) == 2 {
				latencyMS, _ = strconv.ParseFloat(fields[1], 64)
			}
		case "trace_bytes":
			if len(fields) == 2 {
				f.traceBytes, _ = strconv.Atoi(fields[1])
			}
		case "input", "output":
			d, err := parseDesc(fields[1:])
			if err != nil {
				return nil, fmt.Errorf("sim program %s: %q: %w", SimProgram, strings.TrimSpace(l), err)
			}
			if fields[0] == "input" {
				ins = append(ins, d)
			} else {
				outs = append(outs, d)
			}
			continue // rewritten below
		case "mesh":
			continue // written for the opened mesh
		}
		lines = append(lines, strings.Join(fields, " "))
	}
	if f.name == "" || f.fn == "" || len(ins) != 1 || len(outs) != 1 || latencyMS <= 0 || f.traceBytes <= 0 {
		return nil, fmt.Errorf("sim program %s: want a name, one function with a latency, trace bytes, one input and one output", SimProgram)
	}
	in, out := ins[0], outs[0]
	if in.DType != ttnn.BF16 || len(in.Shape) != 4 || in.Shape[1] != Channels || in.Shape[2] != InputSize || in.Shape[3] != InputSize ||
		out.DType != ttnn.F32 || len(out.Shape) != 2 || out.Shape[1] != NumClasses || in.Shape[0] != out.Shape[0] || in.Shape[0] < 1 {
		return nil, fmt.Errorf("sim program %s: %v -> %v is not a ResNet-50 forward (bf16 [B,3,224,224] -> f32 [B,1000])", SimProgram, in, out)
	}
	f.batch = in.Shape[0]
	f.batchLatency = time.Duration(latencyMS * float64(time.Millisecond))
	f.in = ttnn.TensorDesc{Name: in.Name, DType: ttnn.BF16, Shape: []int{1, Channels, InputSize, InputSize}}
	f.out = ttnn.TensorDesc{Name: out.Name, DType: ttnn.F32, Shape: []int{1, NumClasses}}
	// The per-image function: the same program and function names (they seed the outputs).
	var b strings.Builder
	for _, l := range lines {
		switch strings.Fields(l)[0] {
		case "latency_ms":
			l = "latency_ms " + strconv.FormatFloat(latencyMS/float64(f.batch), 'g', -1, 64)
		case "trace_bytes":
			l = "trace_bytes " + strconv.Itoa(f.traceBytes/f.batch)
		case "name":
			b.WriteString(l + "\nmesh " + meshPlaceholder + "\n")
			continue
		}
		b.WriteString(l + "\n")
		if strings.HasPrefix(l, "func ") {
			fmt.Fprintf(&b, "input %s bf16 1 %d %d %d\noutput %s f32 1 %d\n", in.Name, Channels, InputSize, InputSize, out.Name, NumClasses)
		}
	}
	f.manifest = b.String()
	return f, nil
}

func parseDesc(fields []string) (ttnn.TensorDesc, error) {
	if len(fields) < 3 {
		return ttnn.TensorDesc{}, errors.New("want NAME DTYPE DIM [DIM ...]")
	}
	d := ttnn.TensorDesc{Name: fields[0]}
	switch fields[1] {
	case "bf16":
		d.DType = ttnn.BF16
	case "f32":
		d.DType = ttnn.F32
	default:
		return d, fmt.Errorf("dtype %s", fields[1])
	}
	for _, s := range fields[2:] {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return d, fmt.Errorf("dimension %q", s)
		}
		d.Shape = append(d.Shape, n)
	}
	return d, nil
}

// meshPlaceholder stands for the mesh's rows and columns in simFunc.manifest.
const meshPlaceholder = "{mesh}"

// manifestFor is the per-image manifest compiled for mesh.
func (f *simFunc) manifestFor(mesh ttnn.MeshShape) string {
	return strings.Replace(f.manifest, meshPlaceholder, fmt.Sprintf("%d %d", mesh.Rows, mesh.Cols), 1)
}

// The simulator's output generator (ttnn/ttb_sim.c, compute): an FNV-style hash over the
// program name, function name and each input's dtype, shape and bytes seeds a splitmix64
// stream per output, and each float is (r>>40)/2^24*2-1, in [-1, 1).
const (
	fnvOffset = 0xcbf29ce484222325
	fnvPrime  = 0x100000001b3
	outputMix = 0xd1b54a32d192ed03
)

// fnvStep hashes one 8-byte word as the simulator does.
func fnvStep(h, w uint64) uint64 {
	h = (h ^ w) * fnvPrime
	return h ^ h>>29
}

// fnvBytes hashes b: 8-byte little-endian words, then the byte tail.
func fnvBytes(h uint64, b []byte) uint64 {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		h = fnvStep(h, binary.LittleEndian.Uint64(b[i:]))
	}
	for ; i < len(b); i++ {
		h = (h ^ uint64(b[i])) * fnvPrime
	}
	return h
}

func splitmix(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// prefix is the hash state after the program name, function name and the input's dtype and
// shape: what every image's hash starts from.
func (f *simFunc) prefix() uint64 {
	h := fnvBytes(fnvOffset, append([]byte(f.name), 0))
	h = fnvBytes(h, append([]byte(f.fn), 0))
	var u [4]byte
	binary.LittleEndian.PutUint32(u[:], uint32(f.in.DType))
	h = fnvBytes(h, u[:])
	shape := make([]byte, 0, 4*len(f.in.Shape))
	for _, d := range f.in.Shape {
		shape = binary.LittleEndian.AppendUint32(shape, uint32(d))
	}
	return fnvBytes(h, shape)
}

// logits writes the simulator's output for one image (ImageElems bf16 values) into dst
// (NumClasses values): bit for bit what the C simulator computes for the per-image function.
func (f *simFunc) logits(prefix uint64, img []uint16, dst []float32) {
	h := prefix
	i := 0
	for ; i+4 <= len(img); i += 4 {
		h = fnvStep(h, uint64(img[i])|uint64(img[i+1])<<16|uint64(img[i+2])<<32|uint64(img[i+3])<<48)
	}
	for ; i < len(img); i++ { // not reached for 3×224×224, kept for exactness
		h = (h ^ uint64(img[i]&0xff)) * fnvPrime
		h = (h ^ uint64(img[i]>>8)) * fnvPrime
	}
	outputs(h, dst)
}

// logitsLE is logits of the image as little-endian bf16 bytes (the same words, so the same
// hash).
func (f *simFunc) logitsLE(prefix uint64, img []byte, dst []float32) {
	outputs(fnvBytes(prefix, img), dst)
}

// outputs derives the output values from an image's hash.
func outputs(h uint64, dst []float32) {
	s := h ^ 1*outputMix // output 0
	for k := range dst {
		r := splitmix(&s)
		dst[k] = float32(float64(r>>40)/float64(1<<24)*2 - 1)
	}
}

// f32FromBytes reads little-endian float32 values.
func f32FromBytes(dst []float32, b []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

// bf16Bytes writes v as little-endian bytes into dst (2 bytes per value).
func bf16Bytes(dst []byte, v []uint16) {
	for i, x := range v {
		binary.LittleEndian.PutUint16(dst[2*i:], x)
	}
}
