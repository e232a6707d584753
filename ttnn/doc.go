// Package ttnn is the bridge to Tenstorrent devices: a C ABI (include/ttbridge.h) with two
// backends — a simulator in C (always built) and a tt-mlir/TT-Metal backend in C++ (build tag
// `ttnn`) — and a Go API over it in which each open Device (a mesh, or a submesh of one: how
// one process serves several device groups) is owned by one goroutine locked to
// its OS thread. Besides the media/ codec packages (media/turbojpeg, media/webp), it is the only
// package of the module that uses cgo; built with CGO_ENABLED=0 it keeps the same API and every
// call fails with ErrUnsupported.
package ttnn
