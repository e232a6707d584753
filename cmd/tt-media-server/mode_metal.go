//go:build ttnn

package main

import "github.com/tenstorrent/tt-media-server-go/config"

// mockMode: a ttnn build carries both backends; DEVICE_BACKEND=sim runs mock-device mode on
// a hardware host (for tests), anything else the tt-mlir backend.
var mockMode = config.ReadTTMetalEnv().DeviceBackend == "sim"
