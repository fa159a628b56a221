// Package client is an HTTP client of the scheduler's API (docs/api.md):
// the command-line client and the tests talk to a running cluster through
// it, so the paths, the JSON shapes and the error body are written down once.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds one request. The server bounds its own etcd work to
// 5s and answers 503 after that, so 10s leaves room for the answer to travel.
const DefaultTimeout = 10 * time.Second

// Client talks to one replica's API.
type Client struct {
	base    *url.URL
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
// It has a transport of its own, so CloseIdleConnections closes only its
// connections.
func New(server string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(server, "/"))
	if err == nil && ((u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		err = errors.New("no http or https scheme, or no host")
	}
	if err != nil {
		// "127.0.0.1:8080" without a scheme is the usual slip; say what
		// is wanted rather than only what url.Parse disliked.
		return nil, fmt.Errorf("client: server URL %q: want http://HOST:PORT or https://HOST:PORT: %w", server, err)
	}
	c := &Client{base: u, timeout: DefaultTimeout,
		http: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Server is the URL the client talks to.
func (c *Client) Server() string { return c.base.String() }

// CloseIdleConnections closes the kept-alive connections, so a short-lived
// caller (a command, a test) leaves no goroutine behind.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// do sends one request and decodes a 2xx answer into out (nil: discard
// it; a *[]byte: keep it as it came). Anything else comes back as an *Error; no answer at all as an error
// that names the server.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) (status int, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	// path arrives with its names escaped (url.PathEscape, so a name with
	// "/" or "?" stays one segment); keep that spelling, not escape it twice.
	u := *c.base
	u.RawPath = c.base.EscapedPath() + path
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
		return 0, &UnreachableError{Server: c.base.String(), Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return resp.StatusCode, &UnreachableError{Server: c.base.String(), Err: fmt.Errorf("read answer to %s %s: %w", method, path, err)}
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

// maxAnswer bounds what one answer may hold: a job listing of 100,000 jobs
// is about 70 MB, far below it; a broken proxy streaming forever is not,
// and its cut-off answer then fails to decode instead of filling memory.
const maxAnswer = 512 << 20
