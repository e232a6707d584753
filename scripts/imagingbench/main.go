// Command imagingbench times the server's image host work on given files, for
// scripts/bench-imaging.sh, which runs it beside Pillow on the same core (taskset) and prints
// the ratios. Not a test: timings belong in scripts.
//
//	imagingbench preprocess [-fast] [-n N] FILE...   decode + ResNet preprocessing, ms per image
//	imagingbench encode -format jpeg|webp [-q Q] [-n N] FILE   encode of the decoded FILE, ms
//	imagingbench diff FILE...    fast mode's tensor against the exact one (max and mean abs)
//
// Each timing is the median of N runs after one warm-up, printed as "name ms".
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"github.com/tenstorrent/tt-media-server-go/media/imaging"
	"github.com/tenstorrent/tt-media-server-go/runners/resnet"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: imagingbench preprocess|encode|diff ...")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	fast := fs.Bool("fast", false, "fast mode (DCT-scaled decode)")
	n := fs.Int("n", 20, "runs")
	format := fs.String("format", "jpeg", "encode format")
	q := fs.Int("q", 85, "quality")
	goCodecs := fs.Bool("go", false, "pure-Go codecs (NATIVE_CODECS=off)")
	clock := fs.String("clock", "cpu", "cpu (thread CPU time) or wall")
	_ = fs.Parse(os.Args[2:])
	wall = *clock == "wall"
	// One thread does all the work, so its CPU clock is the work's (GOMAXPROCS=1 in the script).
	runtime.LockOSThread()
	imaging.UseNativeCodecs(!*goCodecs)
	var err error
	switch os.Args[1] {
	case "preprocess":
		err = preprocess(fs.Args(), *fast, *n)
	case "encode":
		err = encode(fs.Args(), *format, *q, *n)
	case "diff":
		err = diff(fs.Args())
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagingbench:", err)
		os.Exit(1)
	}
}

// median runs f n times after a warm-up and returns the median time in ms: the thread's CPU
// time (-clock cpu, the default: robust to other processes on a shared box, like Python's
// time.thread_time) or wall time.
func median(n int, f func() error) (float64, error) {
	if err := f(); err != nil {
		return 0, err
	}
	ts := make([]float64, n)
	for i := range ts {
		t0, c0 := time.Now(), threadCPU()
		if err := f(); err != nil {
			return 0, err
		}
		if wall {
			ts[i] = float64(time.Since(t0).Nanoseconds()) / 1e6
		} else {
			ts[i] = float64(threadCPU()-c0) / 1e6
		}
	}
	slices.Sort(ts)
	return ts[n/2], nil
}

// wall selects wall-clock timing (-clock wall).
var wall bool

// threadCPU is this OS thread's CPU time in ns (user + system).
func threadCPU() int64 {
	var ts syscall.Timespec
	// CLOCK_THREAD_CPUTIME_ID = 3.
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return ts.Nano()
}

func tensor(data []byte, fast bool, dst []float32) error {
	o := imaging.DecodeOptions{}
	if fast {
		o.DraftShortSide = 2 * resnet.ResizeSize
	}
	rgb, _, err := imaging.DecodeRGBWith(data, o)
	if err != nil {
		return err
	}
	return resnet.PreprocessInto(dst, rgb, resnet.PILBilinear)
}

func preprocess(files []string, fast bool, n int) error {
	dst := make([]float32, resnet.ImageElems)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		ms, err := median(n, func() error { return tensor(data, fast, dst) })
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		fmt.Printf("%s %.3f\n", filepath.Base(f), ms)
	}
	return nil
}

func encode(files []string, format string, q, n int) error {
	fm, err := imaging.ParseFormat(format)
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		img, _, err := imaging.Decode(data, 0)
		if err != nil {
			return err
		}
		var size int
		ms, err := median(n, func() error {
			b, err := imaging.Encode(img, fm, q)
			size = len(b)
			return err
		})
		if err != nil {
			return err
		}
		fmt.Printf("%s %.3f %d\n", filepath.Base(f), ms, size)
	}
	return nil
}

// diff prints, per file, fast mode's tensor against the exact one: max and mean abs
// difference, in normalised units and in 8-bit levels (×255×0.226, the mean std).
func diff(files []string) error {
	exact := make([]float32, resnet.ImageElems)
	fast := make([]float32, resnet.ImageElems)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := tensor(data, false, exact); err != nil {
			return err
		}
		if err := tensor(data, true, fast); err != nil {
			return err
		}
		var mx, sum float64
		for i := range exact {
			d := math.Abs(float64(exact[i]) - float64(fast[i]))
			mx = max(mx, d)
			sum += d
		}
		mean := sum / float64(len(exact))
		fmt.Printf("%s max %.4f (%.1f levels) mean %.5f (%.2f levels)\n", filepath.Base(f), mx, mx*255*0.226, mean, mean*255*0.226)
	}
	return nil
}
