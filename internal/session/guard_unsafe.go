//go:build unsafe_noguard

package session

// guardDisabled turns the lease guard's deadline off. Test-only: the
// positive control of test/fault builds the scheduler with
// -tags unsafe_noguard to show that its checker catches the double runs a
// missing guard lets through. Never build a release with this tag.
const guardDisabled = true
