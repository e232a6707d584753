// Command bomblora writes a valid SDXL LoRA of about SIZE bytes for scripts/membudget-rss.sh:
// every adaptable module (lora.AllModules) in the diffusers/PEFT layout, F16 factors of one rank
// (capped per module at min(in, out)) chosen so the file reaches SIZE, values small and finite.
// The file is written as it is made, never held in memory.
//
//	go run ./scripts/bomblora OUT.safetensors [SIZE]   (default 1 GiB)
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/tenstorrent/tt-media-server-go/runners/diffusion/lora"
)

type entry struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

func main() {
	if len(os.Args) != 2 && len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: bomblora OUT.safetensors [SIZE]")
		os.Exit(2)
	}
	size := int64(1 << 30)
	if len(os.Args) == 3 {
		var err error
		if size, err = strconv.ParseInt(os.Args[2], 10, 64); err != nil || size <= 0 {
			fmt.Fprintln(os.Stderr, "bomblora: SIZE must be a positive integer")
			os.Exit(2)
		}
	}
	if err := write(os.Args[1], size); err != nil {
		fmt.Fprintln(os.Stderr, "bomblora:", err)
		os.Exit(1)
	}
}

// bytesAt is the factor bytes of every module at rank r.
func bytesAt(mods []lora.Module, r int) int64 {
	var n int64
	for _, m := range mods {
		k := min(r, m.In, m.Out)
		n += 2 * int64(k) * int64(m.In+m.Out)
	}
	return n
}

func write(path string, size int64) error {
	mods := lora.AllModules()
	rank := 1
	for rank < 1280 && bytesAt(mods, rank+1) <= size {
		rank++
	}
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt", "rank": strconv.Itoa(rank)}}
	type tensor struct{ n int64 }
	var order []tensor
	var off int64
	for _, m := range mods {
		k := min(rank, m.In, m.Out)
		prefix := string(m.Component) + "." + m.Name
		for _, t := range []struct {
			suffix string
			shape  []int
		}{{".lora_A.weight", []int{k, m.In}}, {".lora_B.weight", []int{m.Out, k}}} {
			n := 2 * int64(t.shape[0]) * int64(t.shape[1])
			hdr[prefix+t.suffix] = entry{DType: "F16", Shape: t.shape, Offsets: [2]int64{off, off + n}}
			order = append(order, tensor{n})
			off += n
		}
	}
	h, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	_ = binary.Write(w, binary.LittleEndian, uint64(len(h)))
	_, _ = w.Write(h)
	// json.Marshal sorts the keys, but offsets follow mods' order: the tensors are written in
	// that order, so the data tiles exactly.
	pattern := make([]byte, 1<<20)
	for i := 0; i < len(pattern); i += 2 {
		binary.LittleEndian.PutUint16(pattern[i:], 0x2000+uint16(i/2%512)) // about 0.008 .. 0.03
	}
	for _, t := range order {
		for left := t.n; left > 0; {
			k := min(left, int64(len(pattern)))
			if _, err := w.Write(pattern[:k]); err != nil {
				f.Close()
				return err
			}
			left -= k
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("%s: %d modules at rank %d, %d bytes\n", path, len(mods), rank, 8+int64(len(h))+off)
	return nil
}
