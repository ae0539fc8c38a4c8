package grpcprobe_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/grpcprobe"
	"github.com/probelet/probelet/prober/probe/internal/probetest"
)

// serveScript answers every connection as an HTTP/2 server would up to
// the call (its SETTINGS, then the client's frames until awaitCall), then
// writes script and ends its side of the connection, reading what else
// comes (closed unread, it would reset under the client): a server whose
// every frame after its SETTINGS the fuzzer chooses. One server for the
// fuzzing process (probetest.Fixed).
func serveScript(t *testing.T, script []byte) int {
	return scriptServer.Serve(t, h2Conn(func(c net.Conn, fr *http2.Framer) {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if fr.WriteSettings() != nil || !awaitCall(fr) {
			return
		}
		if _, err := c.Write(script); err != nil {
			return
		}
		_ = c.(*net.TCPConn).CloseWrite()
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
	}))
}

var scriptServer probetest.Fixed

// fuzzFrames makes HTTP/2 frames of the fuzzer's bytes, each record a
// type, flags, a stream (0, 1 — the call's — or 3), a length n and n bytes
// of payload: frames that always frame, whatever they hold.
func fuzzFrames(b []byte) []byte {
	var out []byte
	for len(b) >= 4 {
		typ, flags, stream, n := b[0]%11, b[1], [...]uint32{0, 1, 3}[b[2]%3], min(int(b[3]), len(b)-4)
		payload := b[4 : 4+n]
		b = b[4+n:]
		hdr := []byte{0, 0, byte(n), typ, flags, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(hdr[5:], stream)
		out = append(append(out, hdr...), payload...)
	}
	return out
}

// record is one fuzzFrames record.
func record(typ, flags, stream byte, payload ...byte) []byte {
	return append([]byte{typ, flags, stream, byte(len(payload))}, payload...)
}

// hpackLiteral is an HPACK literal field without indexing, new name.
func hpackLiteral(name, value string) []byte {
	b := append([]byte{0, byte(len(name))}, name...)
	return append(append(b, byte(len(value))), value...)
}

// FuzzDirectAnswersAsGRPCGo (issue 42) holds the direct gRPC client to
// grpc-go, the kubelet's: whatever frames a target answers the call with
// — a reply, trailers only, resets, pings, settings, GOAWAY, frames of any
// type and flags on any stream — the probe's result and output are
// grpc-go's, except where the README says the direct client answers
// otherwise (a refused call; the frames, answers and bytes it bounds,
// where grpc-go waits for the deadline). An input on which grpc-go itself
// answers two ways (its reader and the call race) claims nothing. Seeds in
// testdata/fuzz; `make fuzz` runs it.
func FuzzDirectAnswersAsGRPCGo(f *testing.F) {
	grpcJSON := append([]byte{0x88}, hpackLiteral("content-type", "application/grpc")...)
	serving := []byte{0, 0, 0, 0, 2, 8, 1}
	for _, seed := range [][]byte{
		// A reply: headers, message, trailers.
		append(append(record(1, 4, 1, grpcJSON...), record(0, 0, 1, serving...)...), record(1, 5, 1, hpackLiteral("grpc-status", "0")...)...),
		// NOT_SERVING.
		append(append(record(1, 4, 1, grpcJSON...), record(0, 0, 1, 0, 0, 0, 0, 2, 8, 2)...), record(1, 5, 1, hpackLiteral("grpc-status", "0")...)...),
		// Trailers only, a status and a message.
		record(1, 5, 1, append(append(append([]byte{}, grpcJSON...), hpackLiteral("grpc-status", "14")...), hpackLiteral("grpc-message", "back%20soon")...)...),
		// Not gRPC: 404 text.
		record(1, 5, 1, append([]byte{0x8d}, hpackLiteral("content-type", "text/plain")...)...),
		// Headers in two frames.
		append(record(1, 0, 1, grpcJSON[:1]...), record(9, 4, 1, grpcJSON[1:]...)...),
		// Resets, a ping, settings, a window update, a GOAWAY.
		record(3, 0, 1, 0, 0, 0, 8),
		record(3, 0, 1, 0, 0, 0, 7),
		append(record(6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8), record(4, 0, 0, 0, 1, 0, 0, 0, 0)...),
		record(8, 0, 0, 0, 0, 0, 1),
		record(7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
		// A message over the reply's limit.
		append(record(1, 4, 1, grpcJSON...), record(0, 0, 1, 0, 0x10, 0, 0, 0)...),
		// An unknown frame type, a PRIORITY.
		append(record(10, 0, 1, 1, 2, 3), record(2, 0, 1, 0, 0, 0, 0, 1)...),
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		script := fuzzFrames(b)
		port := serveScript(t, script)
		const timeout = 250 * time.Millisecond
		probeGo := func() (probe.Result, string) {
			res, out, _ := grpcprobe.ProbeWithGRPCGo(context.Background(), "127.0.0.1", port, "", timeout)
			return res, out
		}
		wantRes, wantOut := probeGo()
		res, out, err := grpcprobe.Probe(context.Background(), "127.0.0.1", port, "", timeout)
		switch {
		case err != nil:
			t.Fatalf("frames %x: the direct probe errored: %v", script, err)
		case res == wantRes && out == wantOut:
			return
		case strings.HasPrefix(wantOut, "timeout:") && strings.HasPrefix(out, "timeout:"):
			return // both ran into the deadline, in one phase or another
		case documentedEarly(out) && res == probe.Failure && wantRes == probe.Failure:
			// Both fail, and the README says the direct client's words
			// are its own: grpc-go waits for the deadline, or retries a
			// refused call and says what the retry met.
			return
		}
		if againRes, againOut := probeGo(); againRes != wantRes || againOut != wantOut {
			return // grpc-go answers this two ways
		}
		t.Fatalf("frames %x:\ndirect  = (%s, %q)\ngrpc-go = (%s, %q)", script, res, out, wantRes, wantOut)
	})
}

// documentedEarly: an answer the README says the direct client gives
// before the deadline where grpc-go waits for it.
func documentedEarly(out string) bool {
	for _, s := range []string{"the server sent over", "REFUSED_STREAM", "server is draining the connection"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}
