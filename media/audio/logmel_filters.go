package audio

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// ErrMelFilters: a mel filter bank (mel_filters.npz or its parameters) is missing, malformed or
// has the wrong shape.
var ErrMelFilters = errors.New("invalid mel filter bank")

// MelFilters is a mel filter bank: NMels triangular filters over the NFreqs = NFFT/2+1 bins
// of a real FFT, row-major (Weights[m*NFreqs+k]), as whisper's mel_filters.npz stores it.
type MelFilters struct {
	NMels   int
	NFreqs  int
	Weights []float32
}

// SlaneyMelFilters computes the filter bank of librosa.filters.mel(sr=sampleRate, n_fft=nFFT,
// n_mels=nMels, fmin=0, fmax=sampleRate/2, htk=False, norm="slaney") — the bank openai/whisper
// ships in mel_filters.npz (sr 16000, n_fft 400, n_mels 80 and 128). The Slaney mel scale is
// linear below 1 kHz and logarithmic above; each triangle is scaled to unit area (2/(f_hi-f_lo)).
func SlaneyMelFilters(sampleRate, nFFT, nMels int) (*MelFilters, error) {
	if sampleRate <= 0 || nFFT < 2 || nMels < 1 || nMels > 1024 || nFFT > 1<<16 {
		return nil, fmt.Errorf("%w: sample rate %d, n_fft %d, n_mels %d", ErrMelFilters, sampleRate, nFFT, nMels)
	}
	nf := nFFT/2 + 1
	fftFreqs := make([]float64, nf)
	for k := range fftFreqs {
		fftFreqs[k] = float64(k) * float64(sampleRate) / float64(nFFT)
	}
	// nMels+2 points equally spaced on the mel scale from 0 Hz to Nyquist, back in Hz.
	minMel, maxMel := hzToSlaneyMel(0), hzToSlaneyMel(float64(sampleRate)/2)
	melF := make([]float64, nMels+2)
	for i := range melF {
		// numpy.linspace: start + i*step, with the last point exactly the end.
		m := minMel + float64(i)*(maxMel-minMel)/float64(nMels+1)
		if i == nMels+1 {
			m = maxMel
		}
		melF[i] = slaneyMelToHz(m)
	}
	w := make([]float32, nMels*nf)
	for m := 0; m < nMels; m++ {
		lowDiff, highDiff := melF[m+1]-melF[m], melF[m+2]-melF[m+1]
		enorm := 2 / (melF[m+2] - melF[m])
		for k, f := range fftFreqs {
			lower := (f - melF[m]) / lowDiff
			upper := (melF[m+2] - f) / highDiff
			v := math.Max(0, math.Min(lower, upper))
			// librosa stores the triangle in float32, then scales it in place.
			w[m*nf+k] = float32(float64(float32(v)) * enorm)
		}
	}
	return &MelFilters{NMels: nMels, NFreqs: nf, Weights: w}, nil
}

// Slaney's mel scale (librosa's htk=False): 3 mels per 200 Hz below 1 kHz, then log-spaced
// with 27 mels per factor 6.4.
const (
	slaneyFSp      = 200.0 / 3
	slaneyMinLogHz = 1000.0
	slaneyMinLogM  = slaneyMinLogHz / slaneyFSp // 15
)

var slaneyLogStep = math.Log(6.4) / 27

func hzToSlaneyMel(f float64) float64 {
	if f >= slaneyMinLogHz {
		return slaneyMinLogM + math.Log(f/slaneyMinLogHz)/slaneyLogStep
	}
	return f / slaneyFSp
}

func slaneyMelToHz(m float64) float64 {
	if m >= slaneyMinLogM {
		return slaneyMinLogHz * math.Exp(slaneyLogStep*(m-slaneyMinLogM))
	}
	return slaneyFSp * m
}

// maxNPZBytes caps what LoadMelFilters reads: whisper's file is 4.3 KB.
const maxNPZBytes = 64 << 20

// LoadMelFilters reads the bank "mel_<nMels>" from a whisper mel_filters.npz file.
func LoadMelFilters(path string, nMels int) (*MelFilters, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mel filters: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxNPZBytes+1))
	if err != nil {
		return nil, fmt.Errorf("mel filters: read %s: %w", path, err)
	}
	if len(data) > maxNPZBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrMelFilters, path, maxNPZBytes)
	}
	mf, err := ParseMelFiltersNPZ(data, nMels)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return mf, nil
}

// ParseMelFiltersNPZ reads the array "mel_<nMels>" (a 2-D float32 or float64 .npy, C order,
// nMels rows) from the bytes of a NumPy .npz archive such as whisper's mel_filters.npz.
func ParseMelFiltersNPZ(data []byte, nMels int) (*MelFilters, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: not a .npz (zip) archive: %w", ErrMelFilters, err)
	}
	name := fmt.Sprintf("mel_%d.npy", nMels)
	for _, zf := range zr.File {
		if zf.Name != name {
			continue
		}
		if zf.UncompressedSize64 > maxNPZBytes {
			return nil, fmt.Errorf("%w: %s is %d bytes uncompressed", ErrMelFilters, name, zf.UncompressedSize64)
		}
		rc, err := zf.Open()
		if err != nil {
			return nil, fmt.Errorf("%w: open %s: %w", ErrMelFilters, name, err)
		}
		npy, err := io.ReadAll(io.LimitReader(rc, maxNPZBytes+1))
		_ = rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: read %s: %w", ErrMelFilters, name, err)
		}
		rows, cols, vals, err := parseNPY2D(npy)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrMelFilters, name, err)
		}
		if rows != nMels {
			return nil, fmt.Errorf("%w: %s has %d rows, want %d", ErrMelFilters, name, rows, nMels)
		}
		return &MelFilters{NMels: rows, NFreqs: cols, Weights: vals}, nil
	}
	return nil, fmt.Errorf("%w: the archive has no %s", ErrMelFilters, name)
}

var (
	npyDescr   = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	npyFortran = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	npyShape   = regexp.MustCompile(`'shape'\s*:\s*\(\s*(\d+)\s*,\s*(\d+)\s*,?\s*\)`)
)

// parseNPY2D decodes a version 1/2/3 .npy holding a 2-D little-endian float32 or float64 array
// in C order, returned as float32.
func parseNPY2D(b []byte) (rows, cols int, vals []float32, err error) {
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" {
		return 0, 0, nil, errors.New("not a .npy array (bad magic)")
	}
	var hlen, off int
	switch b[6] {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(b[8:10])), 10
	case 2, 3:
		if len(b) < 12 {
			return 0, 0, nil, errors.New("truncated .npy header")
		}
		hlen, off = int(binary.LittleEndian.Uint32(b[8:12])), 12
	default:
		return 0, 0, nil, fmt.Errorf(".npy version %d.%d is not supported", b[6], b[7])
	}
	if hlen > len(b)-off {
		return 0, 0, nil, errors.New("truncated .npy header")
	}
	header := string(b[off : off+hlen])
	body := b[off+hlen:]
	d := npyDescr.FindStringSubmatch(header)
	if d == nil {
		return 0, 0, nil, errors.New(".npy header has no descr")
	}
	if fo := npyFortran.FindStringSubmatch(header); fo == nil || fo[1] != "False" {
		return 0, 0, nil, errors.New(".npy array is not in C order")
	}
	s := npyShape.FindStringSubmatch(header)
	if s == nil {
		return 0, 0, nil, fmt.Errorf(".npy shape is not 2-D in header %q", strings.TrimSpace(header))
	}
	rows, err1 := strconv.Atoi(s[1])
	cols, err2 := strconv.Atoi(s[2])
	if err1 != nil || err2 != nil || rows < 1 || cols < 1 || rows > 1<<16 || cols > 1<<16 {
		return 0, 0, nil, fmt.Errorf(".npy shape (%s, %s) is out of range", s[1], s[2])
	}
	var size int
	switch d[1] {
	case "<f4":
		size = 4
	case "<f8":
		size = 8
	default:
		return 0, 0, nil, fmt.Errorf(".npy dtype %q is not <f4 or <f8", d[1])
	}
	n := rows * cols
	if len(body) != n*size {
		return 0, 0, nil, fmt.Errorf(".npy data is %d bytes; shape (%d, %d) of %s needs %d", len(body), rows, cols, d[1], n*size)
	}
	vals = make([]float32, n)
	for i := range vals {
		if size == 4 {
			vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
		} else {
			vals[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(body[8*i:])))
		}
	}
	return rows, cols, vals, nil
}
