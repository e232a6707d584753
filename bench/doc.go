// Package bench is the load generator behind tt-media-bench: it drives the media server's
// HTTP routes in closed loop (fixed concurrency) or open loop (fixed arrival rate, Poisson or
// constant), bounded by duration or request count after an optional warm-up, and summarises
// each run (status counts, throughput over the whole run and over its steady window, latency
// and time-to-first-chunk percentiles) into
// per-run JSON, a Markdown sweep table, and pass/fail checks against a targets file.
//
// The tool refuses non-loopback targets unless the caller allows them explicitly.
package bench
