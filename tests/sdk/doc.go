// Package sdk holds the OpenAI SDK conformance tests: the official openai npm package and
// openai-go drive the real server binary over loopback (install with tests/sdk/install.sh).
package sdk
