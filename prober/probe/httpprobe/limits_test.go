package httpprobe_test

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
)

// headerBomb answers every connection with a 200 whose headers are size
// bytes of padding, written as fast as the client reads them.
func headerBomb(t *testing.T, size int) (string, int) {
	t.Helper()
	return rawServer(t, true, func(c net.Conn) {
		w := bufio.NewWriter(c)
		_, _ = w.WriteString("HTTP/1.1 200 OK\r\n")
		line := "X-Pad: " + strings.Repeat("a", 1000) + "\r\n"
		for n := 0; n < size; n += len(line) {
			if _, err := w.WriteString(line); err != nil {
				return
			}
		}
		_, _ = w.WriteString("Content-Length: 2\r\n\r\nok")
		_ = w.Flush()
	})
}

// A response's headers are read up to MaxResponseHeaderBytes: a target
// answering megabytes of them is a Failure with net/http's message, as the
// kubelet's is beyond its 10 MiB, and the node buffers no more than that.
func TestResponseHeadersAreBounded(t *testing.T) {
	tests := []struct {
		name   string
		size   int
		want   probe.Result
		output string
	}{
		{"headers well under the limit", 64 << 10, probe.Success, "ok"},
		{"8 MiB of headers", 8 << 20, probe.Failure, "server response headers exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, port := headerBomb(t, tt.size)
			res, out, err := httpprobe.New().Probe(context.Background(),
				httpprobe.Target{Scheme: "HTTP", Host: host, Port: port, Path: "/", Timeout: 5 * time.Second})
			if err != nil || res != tt.want || !strings.Contains(out, tt.output) {
				t.Fatalf("Probe = %v, %q, %v; want %v with %q", res, out, err, tt.want, tt.output)
			}
		})
	}
}
