//go:build !ttnn

package main

// mockMode: a build without the ttnn tag has only the simulated devices.
const mockMode = true
