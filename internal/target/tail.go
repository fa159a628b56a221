package target

import "sync"

// tailBuffer keeps the last n bytes written to it in a fixed ring, so a
// target that writes gigabytes costs n bytes of memory, never more. Both
// executors use it: exec for stdout+stderr, HTTP for the response body.
type tailBuffer struct {
	// mu guards against a caller reading the tail while a copy is still
	// writing; os/exec promises one writer at a time, not a reader's safety.
	mu    sync.Mutex
	limit int    // n
	buf   []byte // grows as written, to n at most: most runs write little
	start int    // index of the oldest byte once the ring is full
	full  bool
	total int64 // bytes ever written, kept to tell a truncated tail apart
}

func newTailBuffer(n int) *tailBuffer {
	return &tailBuffer{limit: n}
}

// Write never fails and never grows the buffer past its capacity.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.total += int64(n)
	size := t.limit
	if size == 0 {
		return n, nil
	}
	if !t.full {
		t.reserve(min(size, len(t.buf)+len(p)))
		room := size - len(t.buf)
		if len(p) <= room {
			t.buf = append(t.buf, p...)
			return n, nil
		}
		t.buf = append(t.buf, p[:room]...)
		p = p[room:]
		t.full = true
		t.start = 0
	}
	// Only the last size bytes of p can survive.
	if len(p) >= size {
		copy(t.buf, p[len(p)-size:])
		t.start = 0
		return n, nil
	}
	k := copy(t.buf[t.start:], p)
	copy(t.buf, p[k:])
	t.start = (t.start + len(p)) % size
	return n, nil
}

// Bytes returns a copy of the tail, oldest byte first.
func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]byte, 0, len(t.buf))
	out = append(out, t.buf[t.start:]...)
	return append(out, t.buf[:t.start]...)
}

func (t *tailBuffer) String() string { return string(t.Bytes()) }

// Total is how many bytes were written, kept or not.
func (t *tailBuffer) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// reserve makes room for want bytes (at most the limit), doubling, so the
// buffer's capacity never passes the limit.
func (t *tailBuffer) reserve(want int) {
	if want <= cap(t.buf) {
		return
	}
	nb := make([]byte, len(t.buf), min(t.limit, max(want, 2*cap(t.buf), 256)))
	copy(nb, t.buf)
	t.buf = nb
}
