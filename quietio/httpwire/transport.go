// Package httpwire is the quiet I/O's HTTP/1.1: a probe's exchange —
// dial, write the request, read the response — on the calling goroutine,
// with net/http's answers.
package httpwire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Transport is an http.RoundTripper for plain HTTP: one
// exchange on the calling goroutine — dial, write the request, read the
// response — where net/http's Transport hands the same exchange between
// three goroutines (a dialler, a writer and a reader per connection). Each
// hand-off wakes a thread in a process that is otherwise idle, which costs
// the node more than the exchange itself (hack/bench/engine). HTTPS goes
// to Next.
//
// What the probe sees is net/http's: the request is written by
// http.Request.Write and the response read by http.ReadResponse, as the
// Transport does; the http.Client around both keeps redirects, the
// timeout and its error texts; and the errors returned here are the
// Transport's for the same failures (httpprobe's direct_test.go runs both
// side by side against the same targets, and its FuzzDirectAnswersAsNetHTTP
// against scripted servers).
type Transport struct {
	// Dial connects (the quiet I/O's raw connection, rawtcp).
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Next takes every request that is not plain HTTP.
	Next http.RoundTripper
	// MaxHeaderBytes bounds a response's headers, as
	// http.Transport.MaxResponseHeaderBytes does (over it: net/http's
	// error).
	MaxHeaderBytes int64
}

// The Transport's buffer sizes.
const bufferSize = 4 << 10

// errHeaderLimit is net/http's Transport's text for headers over limit.
func errHeaderLimit(limit int64) error {
	return fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", limit)
}

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		return t.Next.RoundTrip(req)
	}
	ctx := req.Context()
	conn, err := t.Dial(ctx, "tcp", hostPort(req))
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	// Ending ctx interrupts whatever waits on the connection, as the
	// Transport's cancellation closes it.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	res, err := exchange(req, conn, t.MaxHeaderBytes)
	if err != nil {
		stop()
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	res.Body = &body{ReadCloser: res.Body, ctx: ctx, conn: conn, stop: stop}
	return res, nil
}

// exchange writes req on conn with "Connection: close" (the kubelet's
// transport keeps no connection alive) and reads the response, skipping
// informational ones as the Transport does, its headers bounded by
// maxHeader.
func exchange(req *http.Request, conn net.Conn, maxHeader int64) (*http.Response, error) {
	w := *req
	w.Close = true
	bw := bufio.NewWriterSize(conn, bufferSize)
	if err := w.Write(bw); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	lr := &limitedReader{r: conn, n: maxHeader, err: errHeaderLimit(maxHeader)}
	br := bufio.NewReaderSize(lr, bufferSize)
	// The Transport's read error before any byte of a response comes
	// back as it is.
	if _, err := br.Peek(1); err != nil {
		return nil, err
	}
	for {
		res, err := http.ReadResponse(br, req)
		if err != nil {
			if lr.n <= 0 {
				err = lr.err
			}
			return nil, fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", err)
		}
		if res.StatusCode >= 100 && res.StatusCode <= 199 && res.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		lr.n = math.MaxInt64 // bodies are bounded by their reader
		return res, nil
	}
}

// hostPort is the address dialled: the URL's host and port (a Host header
// changes what is sent, not where).
func hostPort(req *http.Request) string {
	if req.URL.Port() != "" {
		return req.URL.Host
	}
	return net.JoinHostPort(req.URL.Hostname(), "80")
}

// body is the response body on its connection: a read that fails
// because ctx ended reports ctx's cause, as the Transport's body does, and
// Close closes the connection.
type body struct {
	io.ReadCloser
	ctx  context.Context
	conn net.Conn
	stop func() bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && b.ctx.Err() != nil {
		err = context.Cause(b.ctx)
	}
	return n, err
}

func (b *body) Close() error {
	b.stop()
	return b.conn.Close()
}

// ClientTimeout words err, an http.Client's over this Transport with its
// timeout as a deadline on the request's context, as an http.Client with
// a Timeout does once the deadline passed: the transport's error, then
// " (Client.Timeout exceeded while awaiting headers)". A zero deadline (the
// Client enforced its own) is left as it is; so must the caller leave its
// redirect policy's own errors.
func ClientTimeout(err error, deadline time.Time) error {
	var ue *url.Error
	if deadline.IsZero() || !time.Now().After(deadline) || !errors.As(err, &ue) {
		return err
	}
	return &url.Error{Op: ue.Op, URL: ue.URL, Err: &timeoutError{ue.Err.Error() + " (Client.Timeout exceeded while awaiting headers)"}}
}

// BodyTimeout is the same for a body read the deadline cut short.
func BodyTimeout(err error, deadline time.Time) error {
	if deadline.IsZero() || !time.Now().After(deadline) {
		return err
	}
	return &timeoutError{err.Error() + " (Client.Timeout or context cancellation while reading body)"}
}

// timeoutError is net/http's for a Client's timeout.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string   { return e.msg }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }
func (e *timeoutError) Is(err error) bool {
	return err == context.DeadlineExceeded
}

// limitedReader reads up to n bytes of r, then fails with err.
type limitedReader struct {
	r   io.Reader
	n   int64
	err error
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, l.err
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
