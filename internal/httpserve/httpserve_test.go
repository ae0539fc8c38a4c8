package httpserve_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/httpserve"
)

// limits are short so that the test waits little; the attacks last far
// longer than any of them.
var limits = httpserve.Limits{ReadHeader: 300 * time.Millisecond, Read: 600 * time.Millisecond,
	Write: time.Second, Idle: 600 * time.Millisecond, MaxHeaderBytes: 4 << 10}

// attackFor is how long each hostile client would go on if let.
const attackFor = 20 * time.Second

// TestHostileClientsAreCutOff: a client that trickles its header, one
// that trickles its body, one that idles on a kept-alive connection and
// one with a huge header are each cut off (the connection closed by the
// server, or refused with 431) long before they would end, while a
// well-behaved client beside them gets its answers.
func TestHostileClientsAreCutOff(t *testing.T) {
	handled := make(chan struct{}, 16)
	srv := httpserve.WithLimits(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		handled <- struct{}{}
		io.WriteString(w, "ok")
	}), limits)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Close() })
	addr := lis.Addr().String()
	// A new connection per request: a kept one the server closed for
	// idling would fail a POST, which is the client's race, not the test's.
	victim := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

	for _, tc := range []struct {
		name   string
		attack func(c net.Conn, done <-chan struct{}) // until the server cuts it off, or done
	}{
		{"header trickled", func(c net.Conn, done <-chan struct{}) {
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n")
			trickle(c, "X-Slow: a\r\n", done)
		}},
		{"body trickled", func(c net.Conn, done <-chan struct{}) {
			io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
			trickle(c, "a", done)
		}},
		{"idle after a request", func(c net.Conn, done <-chan struct{}) {
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			<-done // keeps the connection open, sending nothing
		}},
		{"huge header", func(c net.Conn, done <-chan struct{}) {
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 64<<10)+"\r\n\r\n")
			<-done
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			done := make(chan struct{})
			defer close(done)
			go tc.attack(c, done)
			start := time.Now()
			// Read what the server sends until it closes the connection.
			resp, _ := io.ReadAll(bufio.NewReader(c))
			if took := time.Since(start); took >= attackFor/2 {
				t.Fatalf("the server held the connection %v, for as long as the client wished", took)
			}
			if tc.name == "huge header" && !strings.Contains(string(resp), "431") {
				t.Errorf("a 64 KiB header: %q, want 431", resp)
			}
			// The well-behaved client beside it.
			r, err := victim.Post("http://"+addr+"/", "text/plain", strings.NewReader("hello"))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode != http.StatusOK || string(body) != "ok" {
				t.Fatalf("the well-behaved client got %d %q", r.StatusCode, body)
			}
		})
	}
}

// trickle writes s every 50 ms until the server closes the connection,
// done, or attackFor passes.
func trickle(c net.Conn, s string, done <-chan struct{}) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(attackFor); time.Now().Before(end); {
		if _, err := io.WriteString(c, s); err != nil {
			return
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

func TestDefaultLimitsBoundEveryPhase(t *testing.T) {
	srv := httpserve.New(http.NotFoundHandler())
	for name, d := range map[string]time.Duration{"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout} {
		if d <= 0 || d > time.Minute+30*time.Second {
			t.Errorf("%s = %v, want a bound of at most 90 s", name, d)
		}
	}
	if srv.MaxHeaderBytes <= 0 || srv.MaxHeaderBytes > 1<<20 {
		t.Errorf("MaxHeaderBytes = %d", srv.MaxHeaderBytes)
	}
}
