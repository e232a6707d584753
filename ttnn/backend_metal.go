//go:build cgo && ttnn

package ttnn

// The metal backend (ttb_metal.cc, tt-mlir runtime). Include and library paths come from the
// environment, e.g.
//
//	CGO_CPPFLAGS="-I$TT_MLIR_HOME/runtime/include -I$TT_MLIR_HOME/build/include ..."
//	CGO_LDFLAGS="-L$TT_MLIR_HOME/build/lib -Wl,-rpath,$TT_MLIR_HOME/build/lib"
//
// See README.md. scripts/check-metal.sh builds and tests it against the fake runtime (fakert/).

/*
#cgo CPPFLAGS: -DTTB_WITH_METAL
#cgo CXXFLAGS: -std=c++20
#cgo LDFLAGS: -lTTMLIRRuntime -lstdc++
*/
import "C"
