// Package docs holds the checks that keep the repository's markdown usable
// as a reference: every relative link and anchor resolves, no doc grows past
// what a reader takes in at once, and each long doc opens with its contents.
// It has no code of its own; `go test ./test/docs/` runs the checks.
package docs
