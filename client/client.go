// Package client is the Go client of the scheduler's HTTP API
// (docs/api.md). The command-line client is built on it, so the paths, the
// JSON shapes and the error body are written down once.
//
// Every call takes a context.Context, which bounds it together with the
// client's own per-request timeout (WithTimeout). An answer other than 2xx
// comes back as an *APIError with the HTTP status and the API's error code
// (CodeUnknownJob, ...); no answer at all as an *UnreachableError naming
// the server. Give New several replicas' URLs, separated by commas, and a
// replica that does not answer is skipped.
//
// The answer types (Job, Run, Member, AppliedConfig, ...) carry the fields of the
// API's JSON and keep the answer itself in Raw, for callers that print it.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultTimeout bounds one request. The server bounds its own etcd work to
// 5s and answers 503 after that, so 10s leaves room for the answer to travel.
const DefaultTimeout = 10 * time.Second

// Client talks to a cluster's API through one replica at a time.
type Client struct {
	bases   []*url.URL
	current *atomic.Int32 // index in bases of the replica that answered last
	token   string
	timeout time.Duration
	http    *http.Client
}

// Option changes a Client as New builds it.
type Option func(*Client)

// WithToken sends "Authorization: Bearer <token>" on every request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithTimeout bounds each request, from sending it to reading the whole
// answer; zero or less means DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// New returns a client of the API at server, e.g. "http://127.0.0.1:8080".
// Several replicas' URLs, separated by commas, are tried in turn: a
// request that gets no answer from one goes to the next (a POST only when
// the connection could not even be made, so that nothing is done twice),
// and the replica that answered is asked first next time. The client has
// a transport of its own, so CloseIdleConnections closes only its
// connections.
func New(server string, opts ...Option) (*Client, error) {
	c := &Client{timeout: DefaultTimeout, current: new(atomic.Int32),
		http: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	for one := range strings.SplitSeq(server, ",") {
		u, err := parseServer(strings.TrimSpace(one))
		if err != nil {
			return nil, err
		}
		c.bases = append(c.bases, u)
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

func parseServer(server string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(server, "/"))
	if err == nil && ((u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		err = errors.New("no http or https scheme, or no host")
	}
	if err != nil {
		// "127.0.0.1:8080" without a scheme is the usual slip; say what
		// is wanted rather than only what url.Parse disliked.
		return nil, fmt.Errorf("client: server URL %q: want http://HOST:PORT or https://HOST:PORT: %w", server, err)
	}
	return u, nil
}

// Server is the URL of the replica the client asks first.
func (c *Client) Server() string { return c.bases[c.current.Load()].String() }

// CloseIdleConnections closes the kept-alive connections, so a short-lived
// caller (a command, a test) leaves no goroutine behind.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// do sends one request to each replica in turn until one answers (see
// New), and decodes a 2xx answer into out (nil: discard it; a *[]byte:
// keep it as it came). Any other answer comes back as an *APIError; no
// answer at all as an *UnreachableError that names the last server asked.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) (status int, err error) {
	first := int(c.current.Load())
	for k := range c.bases {
		i := (first + k) % len(c.bases)
		status, err = c.doAt(ctx, c.bases[i], method, path, query, body, out)
		var u *UnreachableError
		if !errors.As(err, &u) || ctx.Err() != nil || (method != http.MethodGet && !u.dial) {
			if err == nil || !errors.As(err, &u) {
				c.current.Store(int32(i))
			}
			return status, err
		}
	}
	return status, err
}

// doAt is do against one replica.
func (c *Client) doAt(ctx context.Context, base *url.URL, method, path string, query url.Values, body, out any) (status int, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	// path arrives with its names escaped (url.PathEscape, so a name with
	// "/" or "?" stays one segment); keep that spelling, not escape it twice.
	u := *base
	u.RawPath = base.EscapedPath() + path
	if u.Path, err = url.PathUnescape(u.RawPath); err != nil {
		return 0, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("client: %s %s: encode body: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return 0, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, &UnreachableError{Server: base.String(), Err: err, dial: isDial(err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return resp.StatusCode, &UnreachableError{Server: base.String(), Err: fmt.Errorf("read answer to %s %s: %w", method, path, err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, decodeError(resp.StatusCode, data)
	}
	switch out := out.(type) {
	case nil:
		return resp.StatusCode, nil
	case *[]byte: // not JSON (the Prometheus text of /metrics)
		*out = data
		return resp.StatusCode, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, fmt.Errorf("client: %s %s: decode answer: %w", method, path, err)
	}
	return resp.StatusCode, nil
}

// isDial: the connection was never made, so the request was not sent.
func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// maxAnswer bounds what one answer may hold: a job listing of 100,000 jobs
// is about 70 MB, far below it; a broken proxy streaming forever is not,
// and its cut-off answer then fails to decode instead of filling memory.
const maxAnswer = 512 << 20
