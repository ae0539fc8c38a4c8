package httpprobe_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/probelet/probelet/prober/probe/httpprobe"
	"github.com/probelet/probelet/prober/probe/internal/probetest"
)

// replyServer is the fuzzing process's one scripted server (see
// probetest.Fixed).
var replyServer probetest.Fixed

// serveReply makes reply the server's answer and returns its port: every
// connection gets the reply, byte for byte, once the request's header has
// come, and the server ends its side of the connection, reading what else
// comes (closed unread, it would reset under the client): a server whose
// every byte the fuzzer chooses.
func serveReply(t *testing.T, reply []byte) int {
	return replyServer.Serve(t, func(c net.Conn) { answer(c, reply) })
}

func answer(c net.Conn, reply []byte) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	// net/http's client sends a GET's header in one write.
	br := bufio.NewReader(io.LimitReader(c, 64<<10))
	for {
		line, err := br.ReadSlice('\n')
		if err != nil || len(bytes.TrimRight(line, "\r\n")) == 0 {
			break
		}
	}
	if _, err := c.Write(reply); err != nil {
		return
	}
	_ = c.(*net.TCPConn).CloseWrite()
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

// FuzzDirectAnswersAsNetHTTP (issue 42) holds the plain-HTTP exchange on
// the probing goroutine to net/http's Transport, the kubelet's: for any
// bytes a target answers with — a status line, headers, a body, chunks,
// redirects to itself, or garbage — both say the same result, output and
// whether the probe errored. Seeds in testdata/fuzz; `make fuzz` runs it.
func FuzzDirectAnswersAsNetHTTP(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\n\r\nuntil the end",
		"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 4\r\n\r\ndown",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 301 Moved\r\nLocation: http://10.255.255.1/\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 999 Odd\r\n\r\n",
		"HTTP/2.0 200 OK\r\n\r\n",
		"HTTP/1.1 200\r\nX: \x00\r\n\r\n",
		"SSH-2.0-OpenSSH_9.6\r\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	direct, std := httpprobe.New(), httpprobe.New(httpprobe.WithNetHTTPTransport())
	f.Fuzz(func(t *testing.T, reply []byte) {
		target := httpprobe.Target{Host: "127.0.0.1", Port: serveReply(t, reply), Path: "/healthz", Timeout: 2 * time.Second}
		wantRes, wantOut, wantErr := std.Probe(context.Background(), target)
		res, out, err := direct.Probe(context.Background(), target)
		if timedOut(wantErr, wantOut) || timedOut(err, out) {
			return // a machine too slow for the scripted server says nothing of either client
		}
		if res != wantRes || out != wantOut || (err == nil) != (wantErr == nil) {
			t.Fatalf("reply %q:\ndirect  = (%s, %q, %v)\nnet/http = (%s, %q, %v)", reply, res, out, err, wantRes, wantOut, wantErr)
		}
	})
}

// timedOut: the probe ran into its timeout.
func timedOut(err error, out string) bool {
	return errors.Is(err, context.DeadlineExceeded) || bytes.Contains([]byte(out), []byte("Client.Timeout exceeded")) ||
		bytes.Contains([]byte(out), []byte(http.ErrHandlerTimeout.Error()))
}
