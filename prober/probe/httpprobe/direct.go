package httpprobe

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

	"github.com/probelet/probelet/prober/probe"
)

// directTransport is the probe client's transport for plain HTTP: one
// exchange on the calling goroutine — dial, write the request, read the
// response — where net/http's Transport hands the same exchange between
// three goroutines (a dialler, a writer and a reader per connection). Each
// hand-off wakes a thread in a process that is otherwise idle, which costs
// the node more than the exchange itself (hack/bench/engine). HTTPS goes
// to the kubelet's Transport (next).
//
// What the probe sees is net/http's: the request is written by
// http.Request.Write and the response read by http.ReadResponse, as the
// Transport does; the http.Client around both keeps redirects, the
// timeout and its error texts; and the errors returned here are the
// Transport's for the same failures (direct_test.go runs both side by
// side against the same targets).
type directTransport struct {
	dial func(ctx context.Context, network, address string) (net.Conn, error)
	next http.RoundTripper
}

// The Transport's buffer sizes.
const bufferSize = 4 << 10

// errHeaderLimit is the Transport's text for headers over the limit.
var errHeaderLimit = fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", MaxResponseHeaderBytes)

func (t *directTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	conn, err := t.dial(ctx, "tcp", hostPort(req))
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	// Ending ctx interrupts whatever waits on the connection, as the
	// Transport's cancellation closes it.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	res, err := exchange(req, conn)
	if err != nil {
		stop()
		_ = conn.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	res.Body = &directBody{ReadCloser: res.Body, ctx: ctx, conn: conn, stop: stop}
	return res, nil
}

// exchange writes req on conn with "Connection: close" (the kubelet's
// transport keeps no connection alive) and reads the response, skipping
// informational ones as the Transport does, its headers bounded by
// MaxResponseHeaderBytes.
func exchange(req *http.Request, conn net.Conn) (*http.Response, error) {
	w := *req
	w.Close = true
	bw := bufio.NewWriterSize(conn, bufferSize)
	if err := w.Write(bw); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	lr := &probe.LimitedReader{R: conn, N: MaxResponseHeaderBytes, Err: errHeaderLimit}
	br := bufio.NewReaderSize(lr, bufferSize)
	// The Transport's read error before any byte of a response comes
	// back as it is.
	if _, err := br.Peek(1); err != nil {
		return nil, err
	}
	for {
		res, err := http.ReadResponse(br, req)
		if err != nil {
			if lr.N <= 0 {
				err = errHeaderLimit
			}
			return nil, fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", err)
		}
		if res.StatusCode >= 100 && res.StatusCode <= 199 && res.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		lr.N = math.MaxInt64 // bodies are bounded by their reader
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

// directBody is the response body on its connection: a read that fails
// because ctx ended reports ctx's cause, as the Transport's body does, and
// Close closes the connection.
type directBody struct {
	io.ReadCloser
	ctx  context.Context
	conn net.Conn
	stop func() bool
}

func (b *directBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && b.ctx.Err() != nil {
		err = context.Cause(b.ctx)
	}
	return n, err
}

func (b *directBody) Close() error {
	b.stop()
	return b.conn.Close()
}

// clientTimeout words err as an http.Client with a Timeout does once the
// deadline passed: the transport's error, then " (Client.Timeout exceeded
// while awaiting headers)". A zero deadline (the Client enforced its own)
// and the redirect policy's own error are left as they are.
func clientTimeout(err error, deadline time.Time) error {
	var ue *url.Error
	if deadline.IsZero() || !time.Now().After(deadline) || !errors.As(err, &ue) || errors.Is(ue.Err, errTooManyRedirects) {
		return err
	}
	return &url.Error{Op: ue.Op, URL: ue.URL, Err: &timeoutError{ue.Err.Error() + " (Client.Timeout exceeded while awaiting headers)"}}
}

// bodyTimeout is the same for a body read the deadline cut short.
func bodyTimeout(err error, deadline time.Time) error {
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
