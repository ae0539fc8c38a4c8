package httpprobe_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
	"github.com/probelet/probelet/prober/probe/internal/probetest"
)

func TestProbeStatusCodes(t *testing.T) {
	tests := []struct {
		code       int
		wantResult probe.Result
		wantOutput string
	}{
		{http.StatusOK, probe.Success, "ok body"},
		{http.StatusCreated, probe.Success, "ok body"},
		{http.StatusNoContent, probe.Success, ""},
		{299, probe.Success, "ok body"},
		{http.StatusMultipleChoices, probe.Warning, "Probe terminated redirects, Response body: ok body"},
		{http.StatusNotModified, probe.Warning, "Probe terminated redirects, Response body: "},
		{399, probe.Warning, "Probe terminated redirects, Response body: ok body"},
		{http.StatusBadRequest, probe.Failure, "HTTP probe failed with statuscode: 400"},
		{http.StatusNotFound, probe.Failure, "HTTP probe failed with statuscode: 404"},
		{http.StatusInternalServerError, probe.Failure, "HTTP probe failed with statuscode: 500"},
		{http.StatusServiceUnavailable, probe.Failure, "HTTP probe failed with statuscode: 503"},
		{599, probe.Failure, "HTTP probe failed with statuscode: 599"},
	}
	p := httpprobe.New()
	for _, tc := range tests {
		t.Run(strconv.Itoa(tc.code), func(t *testing.T) {
			srv := serve(t, status(tc.code, "ok body"))
			res, out, err := p.Probe(context.Background(), targetOf(t, srv, "/"))
			if err != nil || res != tc.wantResult || out != tc.wantOutput {
				t.Fatalf("Probe(%d) = (%s, %q, %v), want (%s, %q, nil)", tc.code, res, out, err, tc.wantResult, tc.wantOutput)
			}
		})
	}
}

func TestProbeBodyCap(t *testing.T) {
	const limit = 10 << 10
	tests := []struct {
		name    string
		bodyLen int
		wantLen int
	}{
		{"one under the cap", limit - 1, limit - 1},
		{"exactly the cap", limit, limit},
		{"one over the cap", limit + 1, limit},
		{"a megabyte", 1 << 20, limit},
	}
	p := httpprobe.New()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, status(http.StatusOK, strings.Repeat("a", tc.bodyLen)))
			res, out, err := p.Probe(context.Background(), targetOf(t, srv, "/"))
			if err != nil || res != probe.Success || len(out) != tc.wantLen {
				t.Fatalf("Probe = (%s, %d bytes, %v), want (success, %d bytes, nil)", res, len(out), err, tc.wantLen)
			}
		})
	}
}

// TestProbeEndlessBody shows the cap also bounds the time spent: the probe
// stops reading at 10 KiB of a body that never ends.
func TestProbeEndlessBody(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 4096))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	target := targetOf(t, srv, "/")
	target.Timeout = time.Minute
	res, out, err := httpprobe.New().Probe(context.Background(), target)
	if err != nil || res != probe.Success || len(out) != 10<<10 {
		t.Fatalf("Probe = (%s, %d bytes, %v), want (success, 10240 bytes, nil)", res, len(out), err)
	}
}

func TestProbeFailureOmitsBody(t *testing.T) {
	srv := serve(t, status(http.StatusInternalServerError, "secret stack trace"))
	_, out, _ := httpprobe.New().Probe(context.Background(), targetOf(t, srv, "/"))
	if strings.Contains(out, "secret") {
		t.Fatalf("failure output %q contains the body", out)
	}
}

func TestProbeTimeouts(t *testing.T) {
	const awaitingHeaders = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
	slowHeaders := serve(t, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	slowOK := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	})
	tests := []struct {
		name       string
		target     httpprobe.Target
		wantResult probe.Result
		wantOutput string
	}{
		{"server never answers", withTimeout(targetOf(t, slowHeaders, "/"), testTimeout), probe.Failure, awaitingHeaders},
		{"listener never speaks HTTP", withTimeout(silentTarget(t), testTimeout), probe.Failure, awaitingHeaders},
		{"slow answer within timeout", withTimeout(targetOf(t, slowOK, "/"), 5*time.Second), probe.Success, ""},
		{"connection refused", withTimeout(closedTarget(t), testTimeout), probe.Failure, "connect: connection refused"},
	}
	p := httpprobe.New()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, out, err := p.Probe(context.Background(), tc.target)
			if err != nil || res != tc.wantResult || !strings.Contains(out, tc.wantOutput) {
				t.Fatalf("Probe = (%s, %q, %v), want (%s, output containing %q, nil)", res, out, err, tc.wantResult, tc.wantOutput)
			}
			if took := time.Since(start); took > tc.target.Timeout+2*time.Second {
				t.Errorf("probe took %v, timeout was %v", took, tc.target.Timeout)
			}
			if tc.wantResult == probe.Failure && !strings.HasPrefix(out, `Get "http://`) {
				t.Errorf("output %q lacks the client's `Get \"url\"` prefix", out)
			}
		})
	}
}

// TestProbeBodyStallIsError matches the kubelet: headers arrive, the body
// stalls past the timeout, and the read error makes the probe an error (the
// engine discards it) rather than a Failure.
func TestProbeBodyStallIsError(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	res, _, err := httpprobe.New().Probe(context.Background(), withTimeout(targetOf(t, srv, "/"), testTimeout))
	if err == nil || res != probe.Unknown || !strings.Contains(err.Error(), "reading response body") {
		t.Fatalf("Probe = (%s, %v), want unknown and a body read error", res, err)
	}
}

func TestProbeCancelledIsError(t *testing.T) {
	srv := serve(t, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, _, err := httpprobe.New().Probe(ctx, targetOf(t, srv, "/"))
	if !errors.Is(err, context.Canceled) || res != probe.Unknown {
		t.Fatalf("Probe(cancelled) = (%s, %v), want unknown and context.Canceled", res, err)
	}
}

func TestProbeBadTarget(t *testing.T) {
	good := httpprobe.Target{Host: "127.0.0.1", Port: 80, Timeout: time.Second}
	tests := []struct {
		name   string
		mutate func(*httpprobe.Target)
		want   string
	}{
		{"port zero", func(tg *httpprobe.Target) { tg.Port = 0 }, "port 0"},
		{"port too big", func(tg *httpprobe.Target) { tg.Port = 70000 }, "port 70000"},
		{"no timeout", func(tg *httpprobe.Target) { tg.Timeout = 0 }, "timeout"},
		{"ftp scheme", func(tg *httpprobe.Target) { tg.Scheme = "FTP" }, `scheme "FTP"`},
		{"bad host", func(tg *httpprobe.Target) { tg.Host = "a b" }, "building request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target := good
			tc.mutate(&target)
			res, _, err := httpprobe.New().Probe(context.Background(), target)
			if err == nil || res != probe.Unknown || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Probe = (%s, %v), want unknown and an error containing %q", res, err, tc.want)
			}
		})
	}
}

func withTimeout(t httpprobe.Target, d time.Duration) httpprobe.Target {
	t.Timeout = d
	return t
}

// silentTarget is a listener that accepts connections and never answers.
func silentTarget(t *testing.T) httpprobe.Target {
	return httpprobe.Target{Host: "127.0.0.1", Port: probetest.SilentPort(t)}
}

// closedTarget is a loopback port with no listener.
func closedTarget(t *testing.T) httpprobe.Target {
	return httpprobe.Target{Host: "127.0.0.1", Port: probetest.ClosedPort(t)}
}

// A pod without an IP makes the kubelet request http://:port/...: the
// node's own addresses, with the transport's answer.
func TestProbeEmptyHostRequestsTheNodesAddress(t *testing.T) {
	target := targetOf(t, serve(t, status(200, "ok")), "/ready")
	target.Host = ""
	if res, out, err := httpprobe.New().Probe(context.Background(), target); err != nil || res != probe.Success {
		t.Fatalf("Probe(:%d) = (%s, %q, %v), want success", target.Port, res, out, err)
	}
	target.Port = probetest.ClosedPort(t)
	res, out, err := httpprobe.New().Probe(context.Background(), target)
	want := fmt.Sprintf(`Get "http://:%d/ready": dial tcp :%d: connect: connection refused`, target.Port, target.Port)
	if err != nil || res != probe.Failure || out != want {
		t.Fatalf("Probe(closed) = (%s, %q, %v), want failure %q", res, out, err, want)
	}
}
