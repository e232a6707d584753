// Package tests holds the end-to-end tests of tt-media-server: they build the real binary
// once, run it as a subprocess configured only by environment variables (mock-device mode),
// and drive the Python tt-media-server README's scenarios over loopback HTTP. The package has
// no non-test code.
package tests
