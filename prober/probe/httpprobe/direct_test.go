package httpprobe_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"time"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
	"github.com/probelet/probelet/prober/probe/internal/probetest"
)

// rawServer answers every connection with script, after reading the
// request when read is set.
func rawServer(t *testing.T, read bool, script func(c net.Conn)) (string, int) {
	t.Helper()
	return "127.0.0.1", probetest.ServePort(t, func(c net.Conn) {
		if read {
			if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
				return
			}
		}
		script(c)
	})
}

// writes answers with the given raw bytes.
func writes(s string) func(net.Conn) {
	return func(c net.Conn) { _, _ = io.WriteString(c, s) }
}

// localPort hides the client's ephemeral port in error texts.
var localPort = regexp.MustCompile(`(127\.0\.0\.1|\[::1\]):\d+->`)

// The exchange on the probing goroutine answers exactly as net/http's
// Transport does (the kubelet's), target by target: the same result, the
// same output, the same error text — for well-behaved targets and for
// every way a target can misbehave.
func TestDirectExchangeAnswersAsTheTransport(t *testing.T) {
	ok := serve(t, status(http.StatusOK, "ok body"))
	fail := serve(t, status(http.StatusInternalServerError, "secret"))
	redirects := serve(t, redirector)
	other := serve(t, redirector)
	big := serve(t, status(http.StatusOK, strings.Repeat("b", 64<<10)))
	stall := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	chunked := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		for range 3 {
			_, _ = w.Write([]byte("chunk "))
			w.(http.Flusher).Flush()
		}
	})
	hostEcho := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/host" {
			_, _ = io.WriteString(w, r.Host)
			return
		}
		redirector(w, r)
	})
	bombHost, bombPort := headerBomb(t, 8<<20)
	type target struct {
		name string
		t    httpprobe.Target
	}
	raw := func(name string, read bool, script func(net.Conn)) target {
		host, port := rawServer(t, read, script)
		return target{name, httpprobe.Target{Host: host, Port: port, Path: "/", Timeout: time.Second}}
	}
	closed := probetest.ClosedPort(t)
	targets := []target{
		{"200", targetOf(t, ok, "/")},
		{"500", targetOf(t, fail, "/")},
		{"local redirect", targetOf(t, redirects, via("/success", 302))},
		{"redirect to another host", targetOf(t, redirects, via(other.URL+"/success", 301))},
		{"ten redirects", targetOf(t, redirects, "/chain/10")},
		{"redirect loop", targetOf(t, redirects, "/loop")},
		{"Host override across a relative redirect", withHost(targetOf(t, hostEcho, via("/host", 302)), "probe.example")},
		{"64 KiB body", targetOf(t, big, "/")},
		{"chunked body", targetOf(t, chunked, "/")},
		{"body stalls", withTimeout(targetOf(t, stall, "/"), testTimeout)},
		{"connection refused", httpprobe.Target{Host: "127.0.0.1", Port: closed, Path: "/", Timeout: time.Second}},
		{"8 MiB of headers", httpprobe.Target{Host: bombHost, Port: bombPort, Path: "/", Timeout: 5 * time.Second}},
		{"listener never speaks", withTimeout(silentTarget(t), testTimeout)},
		raw("closes without answering", true, func(net.Conn) {}),
		raw("resets", true, func(c net.Conn) { _ = c.(*net.TCPConn).SetLinger(0) }),
		raw("not HTTP", true, writes("hello there\r\n\r\n")),
		raw("informational first", true, writes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")),
		raw("body shorter than its length", true, writes("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")),
		raw("HTTP/1.0 body to the close", true, writes("HTTP/1.0 200 OK\r\n\r\nuntil close")),
		raw("bad status code", true, writes("HTTP/1.1 2000 Huge\r\n\r\n")),
		raw("header without colon", true, writes("HTTP/1.1 200 OK\r\nbroken header\r\n\r\n")),
		raw("switching protocols", true, writes("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n")),
	}
	direct, kubelet := httpprobe.New(), httpprobe.New(httpprobe.WithNetHTTPTransport())
	for _, tc := range targets {
		t.Run(tc.name, func(t *testing.T) {
			res, out, err := direct.Probe(context.Background(), tc.t)
			wantRes, wantOut, wantErr := kubelet.Probe(context.Background(), tc.t)
			got, want := describe(res, out, err), describe(wantRes, wantOut, wantErr)
			if got != want {
				t.Fatalf("direct exchange:\n  %s\nnet/http's Transport:\n  %s", got, want)
			}
		})
	}
}

func describe(res probe.Result, out string, err error) string {
	s := fmt.Sprintf("%s %q", res, localPort.ReplaceAllString(out, "$1:*->"))
	if err != nil {
		s += " error " + localPort.ReplaceAllString(err.Error(), "$1:*->")
	}
	return s
}

func withHost(t httpprobe.Target, host string) httpprobe.Target {
	t.Headers = append(t.Headers, corev1.HTTPHeader{Name: "Host", Value: host})
	return t
}

// The target sees the same request from both: method, URI, protocol,
// Host, the connection closed after it, and every header.
func TestDirectExchangeSendsTheTransportsRequest(t *testing.T) {
	srv, requests := recorder(t)
	target := targetOf(t, srv, "/healthz?x=1")
	target.Headers = append(target.Headers, corev1.HTTPHeader{Name: "X-Custom", Value: "v"}, corev1.HTTPHeader{Name: "Accept", Value: "text/plain"})
	var got [2]string
	for i, p := range []*httpprobe.Prober{httpprobe.New(), httpprobe.New(httpprobe.WithNetHTTPTransport())} {
		if res, out, err := p.Probe(context.Background(), target); err != nil || res != probe.Success {
			t.Fatalf("Probe = (%s, %q, %v)", res, out, err)
		}
		got[i] = fmt.Sprintf("%+v", <-requests)
	}
	if d, k := got[0], got[1]; d != k {
		t.Fatalf("the target saw\n  %s\nfrom the direct exchange, and\n  %s\nfrom net/http's Transport", d, k)
	}
}

// An engine that gives up (its ctx ends) ends the exchange at once, with
// the ctx's error, whatever the target does.
func TestDirectExchangeCancelled(t *testing.T) {
	never := serve(t, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	res, _, err := httpprobe.New().Probe(ctx, targetOf(t, never, "/"))
	if err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) || res != probe.Unknown {
		t.Fatalf("Probe(cancelled) = (%s, %v), want unknown and context canceled", res, err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the cancelled probe took %v", took)
	}
}
