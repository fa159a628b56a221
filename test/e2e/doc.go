// Package e2e holds black-box tests that build the scheduler binary, run it
// as an operator would and drive it from outside: over HTTP and, for the
// dashboard, from a headless Chromium.
package e2e
