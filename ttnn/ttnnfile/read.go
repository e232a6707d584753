package ttnnfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/tenstorrent/tt-media-server-go/ttnn"
)

// Read parses the programs' signatures out of a .ttnn file (a size-prefixed TTNNBinary
// flatbuffer) without the runtime: each program's name, mesh shape and inputs and outputs with
// data type, shape, layout (32x32 tiles or row-major, as the runtime infers it from the tile
// shape) and placement. It walks only the tables on that path (TTNNBinary.programs ->
// Program.{name,inputs,outputs,mesh_shape} -> TensorRef.desc -> TensorDesc.{shape,layout} ->
// LayoutDesc.memory_desc -> MemoryDesc.{storage_type,tile_shape,data_type,memory_config}),
// field numbers from the pinned schemas (include/ttmlir/Target/TTNN/*.fbs), and bounds-checks
// every offset.
func Read(path string) ([]Program, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ttnnfile: %w", err)
	}
	progs, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("ttnnfile: %s: %w", path, err)
	}
	return progs, nil
}

var errCorrupt = errors.New("not a well-formed TTNN flatbuffer")

type fb struct{ b []byte }

func (f fb) u32(off int) (uint32, error) {
	if off < 0 || off+4 > len(f.b) {
		return 0, errCorrupt
	}
	return binary.LittleEndian.Uint32(f.b[off:]), nil
}

func (f fb) u16(off int) (uint16, error) {
	if off < 0 || off+2 > len(f.b) {
		return 0, errCorrupt
	}
	return binary.LittleEndian.Uint16(f.b[off:]), nil
}

// field returns the absolute offset of field n of the table at t, or 0 when absent.
func (f fb) field(t, n int) (int, error) {
	soff, err := f.u32(t)
	if err != nil {
		return 0, err
	}
	vt := t - int(int32(soff))
	vlen, err := f.u16(vt)
	if err != nil {
		return 0, err
	}
	if 4+2*n+2 > int(vlen) {
		return 0, nil
	}
	o, err := f.u16(vt + 4 + 2*n)
	if err != nil || o == 0 {
		return 0, err
	}
	return t + int(o), nil
}

// ref follows the uoffset stored at off (a table, vector or string).
func (f fb) ref(off int) (int, error) {
	v, err := f.u32(off)
	if err != nil {
		return 0, err
	}
	return off + int(v), nil
}

// table returns the table field n of t (0 when absent).
func (f fb) table(t, n int) (int, error) {
	o, err := f.field(t, n)
	if err != nil || o == 0 {
		return 0, err
	}
	return f.ref(o)
}

// vector returns the element offsets of vector field n of t (each element's position).
func (f fb) vector(t, n, elem int) ([]int, error) {
	v, err := f.table(t, n)
	if err != nil || v == 0 {
		return nil, err
	}
	cnt, err := f.u32(v)
	if err != nil {
		return nil, err
	}
	if int(cnt) > len(f.b)/max(elem, 1) {
		return nil, errCorrupt
	}
	out := make([]int, cnt)
	for i := range out {
		out[i] = v + 4 + i*elem
	}
	return out, nil
}

func (f fb) str(t, n int) (string, error) {
	s, err := f.table(t, n)
	if err != nil || s == 0 {
		return "", err
	}
	l, err := f.u32(s)
	if err != nil {
		return "", err
	}
	if s+4+int(l) > len(f.b) {
		return "", errCorrupt
	}
	return string(f.b[s+4 : s+4+int(l)]), nil
}

// scalar reads a little-endian scalar field of width w (absent: def).
func (f fb) scalar(t, n, w int, def uint32) (uint32, error) {
	o, err := f.field(t, n)
	if err != nil || o == 0 {
		return def, err
	}
	switch w {
	case 2:
		v, err := f.u16(o)
		return uint32(v), err
	default:
		return f.u32(o)
	}
}

// TTNN data types (include/ttmlir/Target/Common/types.fbs DataType) that the ABI carries.
var fromTarget = map[uint32]ttnn.DType{0: ttnn.F32, 2: ttnn.BF16, 9: ttnn.U32, 10: ttnn.U16, 11: ttnn.U8, 12: ttnn.I32}

func parse(b []byte) ([]Program, error) {
	if len(b) < 12 || string(b[8:12]) != "TTNN" {
		return nil, errors.New("not a size-prefixed TTNN flatbuffer (file identifier)")
	}
	size := binary.LittleEndian.Uint32(b)
	if int(size)+4 > len(b) {
		return nil, errCorrupt
	}
	f := fb{b[4 : 4+size]}
	root, err := f.ref(0)
	if err != nil {
		return nil, err
	}
	progs, err := f.vector(root, 5, 4) // TTNNBinary.programs
	if err != nil {
		return nil, err
	}
	var out []Program
	for _, po := range progs {
		p, err := f.ref(po)
		if err != nil {
			return nil, err
		}
		var prog Program
		if prog.Name, err = f.str(p, 0); err != nil {
			return nil, err
		}
		if m, err := f.field(p, 7); err != nil { // mesh_shape: Dim2d {y, x}
			return nil, err
		} else if m != 0 {
			y, err1 := f.u32(m)
			x, err2 := f.u32(m + 4)
			if err := errors.Join(err1, err2); err != nil {
				return nil, err
			}
			prog.Mesh = ttnn.MeshShape{Rows: int(int32(y)), Cols: int(int32(x))}
		}
		for slot, dst := range []*[]ttnn.TensorSpec{&prog.Inputs, &prog.Outputs} {
			refs, err := f.vector(p, 1+slot, 4)
			if err != nil {
				return nil, err
			}
			for i, ro := range refs {
				s, err := f.tensorSpec(ro)
				if err != nil {
					return nil, fmt.Errorf("program %s %s %d: %w", prog.Name, []string{"input", "output"}[slot], i, err)
				}
				*dst = append(*dst, s)
			}
		}
		out = append(out, prog)
	}
	return out, nil
}

func (f fb) tensorSpec(refOff int) (ttnn.TensorSpec, error) {
	var s ttnn.TensorSpec
	r, err := f.ref(refOff)
	if err != nil {
		return s, err
	}
	desc, err := f.table(r, 1) // TensorRef.desc
	if err != nil || desc == 0 {
		return s, errors.Join(err, errors.New("tensor ref without desc"))
	}
	dims, err := f.vector(desc, 0, 4) // TensorDesc.shape
	if err != nil {
		return s, err
	}
	s.Shape = []int{}
	for _, d := range dims {
		v, err := f.u32(d)
		if err != nil {
			return s, err
		}
		s.Shape = append(s.Shape, int(int32(v)))
	}
	layout, err := f.table(desc, 2) // TensorDesc.layout
	if err != nil || layout == 0 {
		return s, errors.Join(err, errors.New("tensor desc without layout"))
	}
	md, err := f.table(layout, 1) // LayoutDesc.memory_desc
	if err != nil || md == 0 {
		return s, errors.Join(err, errors.New("layout without memory desc"))
	}
	storage, err := f.scalar(md, 0, 2, 0) // MemoryDesc.storage_type: Host 0, Device 1
	if err != nil {
		return s, err
	}
	if t, err := f.field(md, 1); err != nil { // tile_shape: Dim2d
		return s, err
	} else if t != 0 {
		y, err1 := f.u32(t)
		x, err2 := f.u32(t + 4)
		if err := errors.Join(err1, err2); err != nil {
			return s, err
		}
		if y == 32 && x == 32 {
			s.Layout = ttnn.Tile
		}
	}
	dt, err := f.scalar(md, 2, 2, 0) // MemoryDesc.data_type
	if err != nil {
		return s, err
	}
	var ok bool
	if s.DType, ok = fromTarget[dt]; !ok {
		return s, fmt.Errorf("data type %d has no ABI counterpart", dt)
	}
	s.Placement = ttnn.Host
	if storage == 1 {
		s.Placement = ttnn.DRAM
		if mc, err := f.table(md, 3); err != nil { // memory_config
			return s, err
		} else if mc != 0 {
			bt, err := f.scalar(mc, 1, 2, 0) // buffer_type: DRAM 0, L1 1
			if err != nil {
				return s, err
			}
			if bt == 1 {
				s.Placement = ttnn.L1
			}
		}
	}
	return s, nil
}
