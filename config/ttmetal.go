package config

import "os"

// TTMetalEnv holds TT-Metal's own environment variables that the server reads. They are
// TT-Metal's settings, not the server's (no default, no README row of ours), but like every
// variable they are read here, in config/, and passed down.
type TTMetalEnv struct {
	// Cache is TT_METAL_CACHE: the base of the per-group program caches of worker processes.
	Cache string
	// OperationTimeoutSet: TT_METAL_OPERATION_TIMEOUT_SECONDS is set, and worker processes
	// inherit it as it is instead of getting one derived from the inference timeout.
	OperationTimeoutSet bool
	// VisibleDevices is TT_VISIBLE_DEVICES, the chips a worker process sees.
	VisibleDevices string
	// DeviceBackend is DEVICE_BACKEND: "sim" runs a ttnn build in mock-device mode.
	DeviceBackend string
}

// ReadTTMetalEnv reads TT-Metal's variables from the process environment.
func ReadTTMetalEnv() TTMetalEnv { return TTMetalEnvFrom(os.LookupEnv) }

// TTMetalEnvFrom is ReadTTMetalEnv with an explicit lookup (for tests).
func TTMetalEnvFrom(lookup func(string) (string, bool)) TTMetalEnv {
	get := func(k string) string { v, _ := lookup(k); return v }
	_, timeoutSet := lookup("TT_METAL_OPERATION_TIMEOUT_SECONDS")
	return TTMetalEnv{
		Cache:               get("TT_METAL_CACHE"),
		OperationTimeoutSet: timeoutSet,
		VisibleDevices:      get("TT_VISIBLE_DEVICES"),
		DeviceBackend:       get("DEVICE_BACKEND"),
	}
}
