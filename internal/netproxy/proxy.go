// Package netproxy forwards TCP between a client and a server and can stop
// forwarding or delay it, the way a partition or a slow link looks to both
// ends, or cut every connection, the way a crashed link or a restarted
// member looks. Tests put it between a replica and etcd.
package netproxy

import (
	"net"
	"sync"
	"time"
)

// Proxy forwards TCP from a loopback port to one server. Paused, it stops
// forwarding in both directions but keeps connections open: what a network
// partition looks like to both ends (no reset, just silence).
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	paused bool
	resume chan struct{}    // closed when a pause ends
	delay  [2]time.Duration // by direction: toServer, toClient
	conns  map[net.Conn]struct{}
	cut    bool // refuse new connections
	closed bool
	wg     sync.WaitGroup
}

// New listens on a free loopback port and forwards to target (host:port).
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, resume: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Endpoint is the URL a client dials instead of the member's.
func (p *Proxy) Endpoint() string { return "http://" + p.ln.Addr().String() }

// Pause stops forwarding; connections stay open and data waits.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = true
}

// Resume forwards again, including whatever was held back.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		close(p.resume)
		p.resume = make(chan struct{})
	}
}

// Cut closes every connection and refuses new ones until Restore: unlike a
// pause, the client sees its streams fail, and what it resumes them with
// meets whatever happened on the server meanwhile.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore accepts connections again after Cut.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

const (
	toServer = 0
	toClient = 1
)

// SetDelay holds every chunk for to on its way to the member and for back
// on its way to the client; zero removes the delay.
func (p *Proxy) SetDelay(to, back time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = [2]time.Duration{to, back}
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	if p.paused {
		p.paused = false
		close(p.resume)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.refusing() {
			_ = in.Close()
			continue
		}
		out, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			_ = in.Close() // the member is down: the client tries another
			continue
		}
		if !p.track(in, out) {
			return
		}
		p.wg.Add(2)
		go p.pipe(out, in, toServer)
		go p.pipe(in, out, toClient)
	}
}

func (p *Proxy) refusing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}

// gate blocks while paused and reports the delay to apply.
func (p *Proxy) gate(dir int) (time.Duration, bool) {
	for {
		p.mu.Lock()
		paused, resume, delay, closed := p.paused, p.resume, p.delay[dir], p.closed
		p.mu.Unlock()
		if closed {
			return 0, false
		}
		if !paused {
			return delay, true
		}
		<-resume
	}
}

type chunk struct {
	data    []byte
	arrived time.Time
}

// pipe reads src and hands each chunk, stamped with its arrival, to a
// writer that forwards it once the pause and the delay allow.
func (p *Proxy) pipe(dst, src net.Conn, dir int) {
	defer p.wg.Done()
	chunks := make(chan chunk, 1024)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		defer func() { _ = dst.Close(); _ = src.Close(); p.untrack(dst, src) }()
		for c := range chunks {
			delay, ok := p.gate(dir)
			if !ok {
				return
			}
			if wait := time.Until(c.arrived.Add(delay)); wait > 0 {
				time.Sleep(wait) // the injected latency itself
			}
			if _, err := dst.Write(c.data); err != nil {
				return
			}
		}
	}()
	defer func() { <-writerDone }()
	defer close(chunks)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case chunks <- chunk{data: append([]byte(nil), buf[:n]...), arrived: time.Now()}:
			case <-writerDone:
				return
			}
		}
		if err != nil {
			return
		}
	}
}
