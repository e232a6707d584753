//go:build ttnn

package main

import "os"

// mockMode: a ttnn build carries both backends; DEVICE_BACKEND=sim runs mock-device mode on
// a hardware host (for tests), anything else the tt-mlir backend.
var mockMode = os.Getenv("DEVICE_BACKEND") == "sim"
