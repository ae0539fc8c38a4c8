package httpprobe_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/probelet/probelet/prober/probe/httpprobe"
)

// testTimeout is short: every timeout test waits for it once.
const testTimeout = 200 * time.Millisecond

// serve starts a plain HTTP server for the test.
func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// targetOf points a probe target at srv with the given path.
func targetOf(t testing.TB, srv *httptest.Server, path string) httpprobe.Target {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	host, port := splitHostPort(t, u.Host)
	return httpprobe.Target{Scheme: "HTTP", Host: host, Port: port, Path: path, Timeout: 5 * time.Second}
}

func splitHostPort(t testing.TB, hostport string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}

// status answers every request with code and body.
func status(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

// seen is what a server observed of one request.
type seen struct {
	method, host, uri, proto string
	close                    bool
	header                   http.Header
}

// recorder answers 200 and reports every request it sees on the channel.
func recorder(t *testing.T) (*httptest.Server, <-chan seen) {
	t.Helper()
	ch := make(chan seen, 32)
	srv := serve(t, recordInto(ch, status(http.StatusOK, "")))
	return srv, ch
}

// recordInto reports each request on ch, then lets next answer it.
func recordInto(ch chan<- seen, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ch <- seen{
			method: r.Method, host: r.Host, uri: r.RequestURI, proto: r.Proto,
			close: r.Close, header: r.Header.Clone(),
		}
		next(w, r)
	}
}
