//go:build !unsafe_noguard

package session

// guardDisabled is false in every real build: the lease guard ends the
// session at its deadline (docs/design.md#the-safety-rules, rule 5). See guard_unsafe.go.
const guardDisabled = false
