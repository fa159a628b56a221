package target

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestTailBufferKeepsLastBytes(t *testing.T) {
	tests := []struct {
		name   string
		size   int
		writes []string
		want   string
	}{
		{"empty", 4, nil, ""},
		{"under", 4, []string{"ab"}, "ab"},
		{"exact", 4, []string{"ab", "cd"}, "abcd"},
		{"wraps", 4, []string{"abc", "def"}, "cdef"},
		{"one big write", 4, []string{"abcdefgh"}, "efgh"},
		{"big write after wrap", 4, []string{"abc", "de", "0123456"}, "3456"},
		{"many small", 3, []string{"a", "b", "c", "d", "e"}, "cde"},
		{"zero size", 0, []string{"abc"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTailBuffer(tt.size)
			total := 0
			for _, w := range tt.writes {
				n, err := b.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
				total += n
			}
			if got := b.String(); got != tt.want {
				t.Errorf("tail = %q, want %q", got, tt.want)
			}
			if b.Total() != int64(total) {
				t.Errorf("Total = %d, want %d", b.Total(), total)
			}
		})
	}
}

// TestTailBufferMatchesModel writes random chunks and compares the ring with
// the plain answer: the last n bytes of everything written.
func TestTailBufferMatchesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		size := r.IntN(64) + 1
		b := newTailBuffer(size)
		var all []byte
		for range r.IntN(50) {
			chunk := make([]byte, r.IntN(3*size))
			for i := range chunk {
				chunk[i] = byte(r.Uint32())
			}
			b.Write(chunk)
			all = append(all, chunk...)
		}
		want := all[max(0, len(all)-size):]
		if got := b.Bytes(); !bytes.Equal(got, want) {
			t.Fatalf("size %d after %d bytes: tail %x, want %x", size, len(all), got, want)
		}
		if cap(b.buf) > size {
			t.Fatalf("buffer grew to %d, past its limit %d", cap(b.buf), size)
		}
	}
}
