// Package web holds the browser test of the /ui demo and /docs: Debian's Chromium, driven by
// playwright-core, against the real server binary (install with tests/web/install.sh).
package web
