//go:build cgo && !nonative

package webp

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

// The two libwebp prototypes used (encode.h, types.h), declared here so that building needs
// no header: the library is opened at run time.
static size_t (*tt_WebPEncodeRGBA)(const uint8_t *, int, int, int, float, uint8_t **);
static void (*tt_WebPFree)(void *);

static const char *tt_webp_load(const char *name) {
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) return dlerror();
	*(void **)(&tt_WebPEncodeRGBA) = dlsym(h, "WebPEncodeRGBA");
	*(void **)(&tt_WebPFree) = dlsym(h, "WebPFree");
	if (tt_WebPEncodeRGBA == NULL || tt_WebPFree == NULL) {
		dlclose(h);
		return "WebPEncodeRGBA or WebPFree missing (libwebp 0.6 or newer needed)";
	}
	return NULL;
}

static size_t tt_webp_encode(const uint8_t *rgba, int w, int h, int stride, float q, uint8_t **out) {
	*out = NULL;
	return tt_WebPEncodeRGBA(rgba, w, h, stride, q, out);
}

static void tt_webp_free(void *p) { tt_WebPFree(p); }
*/
import "C"

import (
	"errors"
	"fmt"
	"image"
	"unsafe"
)

func nativeLoad(name string) error {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	if msg := C.tt_webp_load(cs); msg != nil {
		return errors.New(C.GoString(msg))
	}
	return nil
}

func nativeEncode(m *image.NRGBA, quality int) ([]byte, error) {
	b := m.Bounds()
	pix := m.Pix[m.PixOffset(b.Min.X, b.Min.Y):]
	var out *C.uint8_t
	n := C.tt_webp_encode((*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(pix))), C.int(b.Dx()), C.int(b.Dy()), C.int(m.Stride), C.float(quality), &out)
	if out != nil {
		defer C.tt_webp_free(unsafe.Pointer(out))
	}
	if n == 0 {
		return nil, fmt.Errorf("encode webp: libwebp failed on a %dx%d image", b.Dx(), b.Dy())
	}
	return C.GoBytes(unsafe.Pointer(out), C.int(n)), nil
}
