package target

import (
	"io"
	"sync"
)

// copyBuffers lends the buffer a target's output is copied through: one
// io.Copy makes a 32 KiB buffer, per run, and in a burst of short HTTP
// runs those were a quarter of a replica's allocations.
var copyBuffers = sync.Pool{New: func() any {
	b := make([]byte, 4<<10)
	return &b
}}

// copyOut copies src into dst through a pooled buffer.
func copyOut(dst io.Writer, src io.Reader) (int64, error) {
	b := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(b)
	return io.CopyBuffer(dst, src, *b)
}
