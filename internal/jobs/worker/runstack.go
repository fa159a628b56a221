package worker

// A run's goroutine starts with the runtime's small first stack (2 KB
// and up, adapted to the average of all goroutines, most of them idle
// watchers and connections) and goes ~10 KB deep by its release (the
// target call, then the commit of its end): the stack was copied, every
// frame's pointers adjusted, at each doubling, two or three times a run,
// 6 % of a replica at a burst (docs/performance.md, "Profiling"). Growing
// it at once, while it holds one frame, costs one copy of almost nothing.

// runStack is how much stack growRunStack reserves: enough that a run's
// deepest path fits in the stack it makes.
const runStack = 12 << 10

// stackIndex is read, never written: an index the compiler cannot know,
// so that growRunStack's frame is not optimized away.
var stackIndex int

// growRunStack grows the calling goroutine's stack to hold runStack
// more bytes, at the start of a run's goroutine.
//
//go:noinline
func growRunStack() byte {
	var b [runStack]byte
	return b[stackIndex%runStack]
}
