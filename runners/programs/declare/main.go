// Command declare prints the device-program contract of runners/programs: every program's
// mesh, batch and function signatures (the table in docs/DEVICE-PROGRAMS.md); with -mesh NAME,
// one program's mesh as "rows,cols" (for scripts/compile-device-programs.sh); with -check DIR
// [NAME...], checks the .ttnn files of a MODEL_WEIGHTS_PATH against their declarations —
// mesh, and every input and output's dtype, shape, layout and placement — without a device
// (ttnnfile.Read), one line per difference, exit status 1 if any.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/tenstorrent/tt-media-server-go/runners/programs"
	"github.com/tenstorrent/tt-media-server-go/ttnn"
	"github.com/tenstorrent/tt-media-server-go/ttnn/ttnnfile"
)

func main() {
	mesh := flag.String("mesh", "", "print this program's mesh as rows,cols")
	check := flag.String("check", "", "check DIR/<program>.ttnn against the declarations (the programs named after the flags, or every one present)")
	flag.Parse()
	if *check != "" {
		os.Exit(checkDir(*check, flag.Args()))
	}
	if *mesh != "" {
		p, ok := programs.Lookup(*mesh)
		if !ok {
			fmt.Fprintf(os.Stderr, "declare: program %q is not declared in runners/programs\n", *mesh)
			os.Exit(2)
		}
		fmt.Printf("%d,%d\n", p.Mesh.Rows, p.Mesh.Cols)
		return
	}
	fmt.Print(table())
}

// table is the contract as a Markdown table (docs/DEVICE-PROGRAMS.md holds it verbatim).
func table() string {
	var b strings.Builder
	b.WriteString("| program (`.ttnn` file) | mesh | batch | function | inputs | outputs |\n|---|---|---|---|---|---|\n")
	for _, p := range programs.All() {
		for _, f := range p.Functions {
			fmt.Fprintf(&b, "| `%s` | %v | %d | `%s` | %s | %s |\n", p.Name, p.Mesh, p.Batch, f.Name, sig(f.Inputs), sig(f.Outputs))
		}
	}
	return b.String()
}

func sig(ts []ttnn.TensorSpec) string {
	var parts []string
	for _, t := range ts {
		layout := "row-major"
		if t.Layout == ttnn.Tile {
			layout = "tile"
		}
		dims := make([]string, len(t.Shape))
		for i, d := range t.Shape {
			dims[i] = fmt.Sprint(d)
		}
		parts = append(parts, fmt.Sprintf("`%s` %v[%s] %s", t.Name, t.DType, strings.Join(dims, ","), layout))
	}
	return strings.Join(parts, "<br>")
}

func checkDir(dir string, names []string) int {
	all := len(names) == 0
	if all {
		for _, p := range programs.All() {
			names = append(names, p.Name)
		}
	}
	bad, checked := 0, 0
	for _, name := range names {
		spec, ok := programs.Lookup(name)
		if !ok {
			fmt.Printf("%s: not declared in runners/programs\n", name)
			bad++
			continue
		}
		path := programs.MetalPath(dir, name)
		if _, err := os.Stat(path); err != nil {
			if !all {
				fmt.Printf("%s: %v\n", name, err)
				bad++
			}
			continue
		}
		checked++
		if err := checkFile(spec, path); err != nil {
			fmt.Println(err)
			bad++
			continue
		}
		fmt.Printf("%s: ok (%s)\n", name, path)
	}
	if checked == 0 && bad == 0 {
		fmt.Printf("no declared program's .ttnn file in %s\n", dir)
		return 1
	}
	if bad > 0 {
		return 1
	}
	return 0
}

func checkFile(spec ttnn.ProgramSpec, path string) error {
	progs, err := ttnnfile.Read(path)
	if err != nil {
		return err
	}
	var fns []ttnn.Function
	byName := map[string]ttnnfile.Program{}
	for i, p := range progs {
		fns = append(fns, ttnn.Function{Index: i, Name: p.Name, Inputs: ttnn.Descs(p.Inputs), Outputs: ttnn.Descs(p.Outputs)})
		byName[p.Name] = p
	}
	if err := spec.Check(path, fns); err != nil {
		return err
	}
	for _, f := range spec.Functions {
		p := byName[f.Name]
		if p.Mesh != spec.Mesh {
			return fmt.Errorf("program %s (%s): function %s: compiled for a %v mesh, %v declared", spec.Name, path, f.Name, p.Mesh, spec.Mesh)
		}
		for _, io := range []struct {
			kind       string
			want, have []ttnn.TensorSpec
		}{{"input", f.Inputs, p.Inputs}, {"output", f.Outputs, p.Outputs}} {
			for i, w := range io.want {
				h := io.have[i]
				if h.Layout != w.Layout || h.Placement != w.Placement {
					return fmt.Errorf("program %s (%s): function %s: %s %d (%s): %s in %s in the file, %s in %s declared", spec.Name, path,
						f.Name, io.kind, i, w.Name, layoutName(h.Layout), placeName(h.Placement), layoutName(w.Layout), placeName(w.Placement))
				}
			}
		}
	}
	return nil
}

func layoutName(l ttnn.Layout) string {
	if l == ttnn.Tile {
		return "tile"
	}
	return "row-major"
}

func placeName(p ttnn.Placement) string { return [...]string{"DRAM", "L1", "host"}[min(int(p), 2)] }
