//go:build cgo && !nonative

package turbojpeg

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

// The TurboJPEG 2.x prototypes this package uses (libjpeg-turbo 2.0+, turbojpeg.h), declared
// here so that building needs no header: the library is opened at run time.
typedef void *tt_tjhandle;
static tt_tjhandle (*tt_tjInitDecompress)(void);
static tt_tjhandle (*tt_tjInitCompress)(void);
static int (*tt_tjDestroy)(tt_tjhandle);
static int (*tt_tjDecompressHeader3)(tt_tjhandle, const unsigned char *, unsigned long, int *, int *, int *, int *);
static int (*tt_tjDecompress2)(tt_tjhandle, const unsigned char *, unsigned long, unsigned char *, int, int, int, int, int);
static int (*tt_tjCompress2)(tt_tjhandle, const unsigned char *, int, int, int, int, unsigned char **, unsigned long *, int, int, int);
static void (*tt_tjFree)(unsigned char *);
static unsigned char *(*tt_tjAlloc)(int);
static unsigned long (*tt_tjBufSize)(int, int, int);
static char *(*tt_tjGetErrorStr2)(tt_tjhandle);
static int (*tt_tjGetErrorCode)(tt_tjhandle);

static void *tt_tj_lib;

// tt_tj_load opens name and resolves every symbol; it returns NULL or the reason.
static const char *tt_tj_load(const char *name) {
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) return dlerror();
#define TT_SYM(v, s) if ((*(void **)(&v) = dlsym(h, s)) == NULL) { dlclose(h); return "symbol " s " missing (TurboJPEG 2.0 or newer needed)"; }
	TT_SYM(tt_tjInitDecompress, "tjInitDecompress")
	TT_SYM(tt_tjInitCompress, "tjInitCompress")
	TT_SYM(tt_tjDestroy, "tjDestroy")
	TT_SYM(tt_tjDecompressHeader3, "tjDecompressHeader3")
	TT_SYM(tt_tjDecompress2, "tjDecompress2")
	TT_SYM(tt_tjCompress2, "tjCompress2")
	TT_SYM(tt_tjFree, "tjFree")
	TT_SYM(tt_tjAlloc, "tjAlloc")
	TT_SYM(tt_tjBufSize, "tjBufSize")
	TT_SYM(tt_tjGetErrorStr2, "tjGetErrorStr2")
	TT_SYM(tt_tjGetErrorCode, "tjGetErrorCode")
#undef TT_SYM
	tt_tj_lib = h;
	return NULL;
}

static tt_tjhandle tt_init_decompress(void) { return tt_tjInitDecompress(); }
static tt_tjhandle tt_init_compress(void) { return tt_tjInitCompress(); }
static void tt_destroy(tt_tjhandle h) { tt_tjDestroy(h); }
static const char *tt_error(tt_tjhandle h) { return tt_tjGetErrorStr2(h); }
static int tt_error_code(tt_tjhandle h) { return tt_tjGetErrorCode(h); }
static int tt_header(tt_tjhandle h, const unsigned char *buf, unsigned long n, int *w, int *ht, int *ss, int *cs) {
	return tt_tjDecompressHeader3(h, buf, n, w, ht, ss, cs);
}
static int tt_decompress(tt_tjhandle h, const unsigned char *buf, unsigned long n, unsigned char *dst, int w, int pitch, int ht, int pf, int flags) {
	return tt_tjDecompress2(h, buf, n, dst, w, pitch, ht, pf, flags);
}
// tt_compress compresses into *out, a buffer of *cap bytes kept with the compressor and grown
// to tjBufSize's worst case when too small (so TurboJPEG never reallocates: no fresh pages to
// fault in per image); *n is the JPEG's length.
static int tt_compress(tt_tjhandle h, const unsigned char *src, int w, int pitch, int ht, int pf, unsigned char **out, unsigned long *cap, unsigned long *n, int ss, int q, int flags) {
	unsigned long need = tt_tjBufSize(w, ht, ss);
	if (need == (unsigned long)-1 || need > 0x7fffffffUL) return -2;
	if (*out == NULL || *cap < need) {
		if (*out != NULL) tt_tjFree(*out);
		*out = tt_tjAlloc((int)need);
		*cap = *out ? need : 0;
		if (*out == NULL) return -2;
	}
	*n = *cap;
	return tt_tjCompress2(h, src, w, pitch, ht, pf, out, n, ss, q, flags | 1024); // TJFLAG_NOREALLOC
}
static void tt_free(unsigned char *p) { tt_tjFree(p); }
*/
import "C"

import (
	"errors"
	"fmt"
	"image"
	"image/draw"
	"runtime"
	"unsafe"
)

// TurboJPEG constants (turbojpeg.h, 2.x).
const (
	tjpfRGBA = 7
	tjpfGray = 6

	tjsamp420  = 2
	tjsampGray = 3

	tjcsGray = 2
	tjcsCMYK = 3
	tjcsYCCK = 4

	tjflagAccurateDCT = 4096
	tjerrWarning      = 0
)

func nativeLoad(name string) error {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	if msg := C.tt_tj_load(cs); msg != nil {
		return errors.New(C.GoString(msg))
	}
	return nil
}

// The idle TurboJPEG instances kept for reuse (an instance is not safe for concurrent use); at
// most cap(...) idle ones are kept, the rest destroyed.
//
// Only an instance whose last call returned 0 goes back: one that saw an error is destroyed.
// libjpeg reports a fatal error by longjmp out of the decoder, and TurboJPEG 2.x's header
// reader does not reset the instance on that path, so the instance stays inside its header
// parser and refuses every later JPEG ("two SOI markers"): one malformed upload (12-bit, cut
// off in its headers, 0 components, lossless SOF3) made every later valid one fail until
// restart (issue 30). Warnings are treated the same way (an instance is cheap to create).
var (
	decompressors = make(chan C.tt_tjhandle, 2*runtime.GOMAXPROCS(0))
	compressors   = make(chan *compressor, 2*runtime.GOMAXPROCS(0))
)

// compressor is a TurboJPEG compressor with its output buffer (C memory, reused).
type compressor struct {
	h   C.tt_tjhandle
	buf *C.uchar
	cap C.ulong
}

func getCompressor() (*compressor, error) {
	select {
	case c := <-compressors:
		return c, nil
	default:
	}
	h := C.tt_init_compress()
	if h == nil {
		return nil, errors.New("libturbojpeg: cannot create an instance")
	}
	return &compressor{h: h}, nil
}

// putCompressor pools c when its last call succeeded (ok) and destroys it otherwise.
func putCompressor(c *compressor, ok bool) {
	if ok {
		select {
		case compressors <- c:
			return
		default:
		}
	}
	C.tt_destroy(c.h)
	if c.buf != nil {
		C.tt_free(c.buf)
	}
}

func getDecompressor() (C.tt_tjhandle, error) {
	select {
	case h := <-decompressors:
		return h, nil
	default:
	}
	h := C.tt_init_decompress()
	if h == nil {
		return nil, errors.New("libturbojpeg: cannot create an instance")
	}
	return h, nil
}

// putDecompressor pools h when its last call succeeded (ok) and destroys it otherwise.
func putDecompressor(h C.tt_tjhandle, ok bool) {
	if ok {
		select {
		case decompressors <- h:
			return
		default:
		}
	}
	C.tt_destroy(h)
}

func bufPtr(b []byte) *C.uchar { return (*C.uchar)(unsafe.Pointer(unsafe.SliceData(b))) }

func nativeHeader(data []byte) (Header, error) {
	if len(data) == 0 {
		return Header{}, fmt.Errorf("%w: empty data", ErrInvalid)
	}
	h, err := getDecompressor()
	if err != nil {
		return Header{}, err
	}
	var w, ht, ss, cs C.int
	rc := C.tt_header(h, bufPtr(data), C.ulong(len(data)), &w, &ht, &ss, &cs)
	if rc != 0 {
		err := fmt.Errorf("%w: %s", ErrInvalid, C.GoString(C.tt_error(h)))
		putDecompressor(h, false)
		return Header{}, err
	}
	putDecompressor(h, true)
	if w <= 0 || ht <= 0 {
		return Header{}, fmt.Errorf("%w: %dx%d pixels", ErrInvalid, w, ht)
	}
	return Header{Width: int(w), Height: int(ht), Gray: cs == tjcsGray, CMYK: cs == tjcsCMYK || cs == tjcsYCCK}, nil
}

// nativeDecode decodes at scale 1/denom (TurboJPEG's TJSCALED rounding up).
// The pixels go into buf when it is large enough.
func nativeDecode(data []byte, hd Header, denom int, rgb bool, buf []byte) (image.Image, error) {
	w, ht := (hd.Width+denom-1)/denom, (hd.Height+denom-1)/denom
	h, err := getDecompressor()
	if err != nil {
		return nil, err
	}
	var img image.Image
	var pix []byte
	var stride, pf int
	if hd.Gray && !rgb {
		g := image.NewGray(image.Rect(0, 0, w, ht))
		img, pix, stride, pf = g, g.Pix, g.Stride, tjpfGray
	} else {
		// RGBA output: libjpeg-turbo writes 0xFF alpha, so the result is an opaque NRGBA. Every
		// byte is written (a truncated stream's missing rows come out grey), so reused storage
		// needs no clearing.
		var m *image.NRGBA
		if n := 4 * w * ht; cap(buf) >= n {
			m = &image.NRGBA{Pix: buf[:n], Stride: 4 * w, Rect: image.Rect(0, 0, w, ht)}
		} else {
			m = image.NewNRGBA(image.Rect(0, 0, w, ht))
		}
		img, pix, stride, pf = m, m.Pix, m.Stride, tjpfRGBA
	}
	// Flags 0: accurate integer IDCT and fancy upsampling, libjpeg's (and Pillow's) defaults.
	rc := C.tt_decompress(h, bufPtr(data), C.ulong(len(data)), bufPtr(pix), C.int(w), C.int(stride), C.int(ht), C.int(pf), 0)
	if rc == 0 {
		putDecompressor(h, true)
		return img, nil
	}
	// A warning (e.g. premature end of data, extraneous bytes) leaves a complete image whose
	// missing part is grey, as libjpeg hands it to Pillow; only fatal errors fail. Either
	// way the instance is not reused.
	fatal := C.tt_error_code(h) != tjerrWarning
	msg := C.GoString(C.tt_error(h))
	putDecompressor(h, false)
	if fatal {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, msg)
	}
	return img, nil
}

func nativeEncode(img image.Image, quality int) ([]byte, error) {
	b := img.Bounds()
	w, ht := b.Dx(), b.Dy()
	var pix []byte
	var stride, pf, ss int
	switch m := img.(type) {
	case *image.Gray:
		pix, stride, pf, ss = m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, tjpfGray, tjsampGray
	case *image.RGBA:
		// Premultiplied: the stored colour is what image/jpeg encodes.
		pix, stride, pf, ss = m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, tjpfRGBA, tjsamp420
	default:
		if m, ok := img.(*image.NRGBA); ok && opaque(m) {
			pix, stride, pf, ss = m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, tjpfRGBA, tjsamp420
			break
		}
		c := image.NewRGBA(image.Rect(0, 0, w, ht))
		draw.Draw(c, c.Rect, img, b.Min, draw.Src)
		pix, stride, pf, ss = c.Pix, c.Stride, tjpfRGBA, tjsamp420
	}
	c, err := getCompressor()
	if err != nil {
		return nil, err
	}
	var n C.ulong
	rc := C.tt_compress(c.h, bufPtr(pix), C.int(w), C.int(stride), C.int(ht), C.int(pf), &c.buf, &c.cap, &n, C.int(ss), C.int(quality), tjflagAccurateDCT)
	switch rc {
	case 0:
		out := C.GoBytes(unsafe.Pointer(c.buf), C.int(n))
		putCompressor(c, true)
		return out, nil
	case -2:
		putCompressor(c, false)
		return nil, fmt.Errorf("encode jpeg: no buffer for a %dx%d image", w, ht)
	default:
		err := fmt.Errorf("encode jpeg: %s", C.GoString(C.tt_error(c.h)))
		putCompressor(c, false)
		return nil, err
	}
}

// opaque reports whether every pixel of m has alpha 255.
func opaque(m *image.NRGBA) bool {
	b := m.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		row := m.Pix[m.PixOffset(b.Min.X, y) : m.PixOffset(b.Min.X, y)+4*b.Dx()]
		for i := 3; i < len(row); i += 4 {
			if row[i] != 0xFF {
				return false
			}
		}
	}
	return true
}
