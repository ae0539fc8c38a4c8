package grpcprobe_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/grpcprobe"
	"github.com/probelet/probelet/prober/probe/internal/probetest"
)

// Probe runs the check on one goroutine; ProbeWithGRPCGo runs it through
// grpc-go, as the kubelet does. Against the same targets — gRPC servers,
// HTTP servers that are not gRPC, and servers scripted frame by frame into
// the replies grpc-go has to make sense of — both answer the same, except
// where probelet deliberately differs (README).
func TestProbeAnswersAsGRPCGo(t *testing.T) {
	hs := health.NewServer()
	hs.SetServingStatus("web", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	withHealth := startServer(t, hs)
	serving := healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}
	reply := grpcMessage(t, &serving)

	tests := []struct {
		name    string
		port    int
		service string
		// differs is probelet's answer where it deliberately differs.
		differs string
		// budget: probelet's answer comes from reading its byte budget,
		// which the server must fill before the deadline even on a loaded
		// machine, so its probe gets budgetTimeout (grpc-go's, which reads
		// until the deadline, keeps timeout).
		budget bool
	}{
		{name: "serving", port: withHealth},
		{name: "service serving", port: withHealth, service: "web"},
		{name: "service not serving", port: withHealth, service: "db"},
		{name: "service not registered", port: withHealth, service: "nope"},
		{name: "no health service", port: startServer(t, nil)},
		{name: "slow health handler", port: startServer(t, hangingHealth{})},
		{name: "a status with an escaped message", port: startServer(t, failingHealth{st: status.New(codes.Unavailable, "50% down: ça va")})},
		{name: "a padded reply", port: startServer(t, paddedHealth{pad: 1 << 10})},
		{name: "a reply over the limit", port: startServer(t, paddedHealth{pad: 2 << 20})},
		{name: "closed port", port: probetest.ClosedPort(t)},
		{name: "silent listener", port: probetest.SilentPort(t)},
		{name: "an HTTP/1 server", port: serveHTTP(t, false, func(w http.ResponseWriter, _ *http.Request) {})},
		{name: "HTTP/2, 404 not gRPC", port: serveHTTP(t, true, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte("no such page"))
		})},
		{name: "HTTP/2, 200 HTML over 1 KiB", port: serveHTTP(t, true, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write(bytes.Repeat([]byte("<p>hello</p>"), 200))
		})},
		{name: "HTTP/2, 503 without a content-type", port: serveHTTP(t, true, func(w http.ResponseWriter, _ *http.Request) {
			w.Header()["Content-Type"] = nil
			w.WriteHeader(http.StatusServiceUnavailable)
		})},
		{name: "trailers only, unavailable", port: serveHTTP(t, true, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Grpc-Status", "14")
			w.Header().Set("Grpc-Message", "back%20soon%zz")
		})},
		{name: "no message, status OK", port: serveHTTP(t, true, grpcReply(nil, "0"))},
		{name: "a message, status not found", port: serveHTTP(t, true, grpcReply(reply, "5"))},
		{name: "two messages", port: serveHTTP(t, true, grpcReply(append(append([]byte{}, reply...), reply...), "0"))},
		{name: "a message cut short", port: serveHTTP(t, true, grpcReply(reply[:len(reply)-1], "0"))},
		{name: "a prefix cut short", port: serveHTTP(t, true, grpcReply(reply[:3], "0"))},
		{name: "a compressed message without an encoding", port: serveHTTP(t, true, grpcReply(append([]byte{1}, reply[1:]...), "0"))},
		{name: "a message that is not protobuf", port: serveHTTP(t, true, grpcReply([]byte{0, 0, 0, 0, 2, 0xff, 0xff}, "0"))},
		{name: "a malformed grpc-status", port: serveHTTP(t, true, grpcReply(reply, "abc"))},
		{name: "a reply without trailers", port: serveH2(t, func(fr *http2.Framer) {
			writeHeaders(fr, false, ":status", "200", "content-type", "application/grpc")
			_ = fr.WriteData(1, true, reply)
		})},
		{name: "reset: cancel", port: serveH2(t, func(fr *http2.Framer) { _ = fr.WriteRSTStream(1, http2.ErrCodeCancel) })},
		{name: "reset: protocol error", port: serveH2(t, func(fr *http2.Framer) { _ = fr.WriteRSTStream(1, http2.ErrCodeProtocol) })},
		{name: "reset: an unknown code", port: serveH2(t, func(fr *http2.Framer) { _ = fr.WriteRSTStream(1, 0x99) })},
		{name: "closed after settings", port: serveH2(t, func(*http2.Framer) {})},
		{name: "pings and settings, then the reply", port: serveH2(t, func(fr *http2.Framer) {
			_ = fr.WritePing(false, [8]byte{1})
			_ = fr.WriteSettings(http2.Setting{ID: http2.SettingHeaderTableSize, Val: 0})
			writeHeaders(fr, false, ":status", "200", "content-type", "application/grpc")
			_ = fr.WriteData(1, false, reply)
			writeHeaders(fr, true, "grpc-status", "0")
			waitClosed(fr)
		})},
		{name: "headers over the limit", port: serveH2(t, func(fr *http2.Framer) {
			writeHeaders(fr, false, ":status", "200", "content-type", "application/grpc", "x-pad", strings.Repeat("x", 12<<10))
			for range 100 {
				_ = fr.WriteContinuation(1, false, hpackFields("x-more", strings.Repeat("y", 12<<10)))
			}
			_ = fr.WriteContinuation(1, true, nil)
			waitClosed(fr)
		})},
		{name: "a first frame that is not settings", port: serveH2Raw(t, func(fr *http2.Framer) {
			_ = fr.WritePing(false, [8]byte{})
			waitClosed(fr)
		})},
		{name: "reset: refused stream", port: serveH2(t, func(fr *http2.Framer) { _ = fr.WriteRSTStream(1, http2.ErrCodeRefusedStream) }),
			differs: "error: health rpc probe failed: rpc error: code = Unavailable desc = stream terminated by RST_STREAM with error code: REFUSED_STREAM"},
		{name: "a flood of pings", port: pingFlood(t, false), differs: "error: health rpc probe failed: rpc error: code = Unavailable desc = error reading from server: the server sent over 100 pings and settings"},
		// Frames that need no answer and carry next to nothing: the
		// frames' own bound ends them.
		{name: "a flood of ping acks", port: pingFlood(t, true), differs: tooManyFrames},
		{name: "a flood of empty DATA", port: serveH2(t, func(fr *http2.Framer) {
			writeHeaders(fr, false, ":status", "200", "content-type", "application/grpc")
			flood(func() error { return fr.WriteData(1, false, nil) })
		}), differs: tooManyFrames},
		{name: "a flood of 1-byte DATA", port: serveH2(t, func(fr *http2.Framer) {
			writeHeaders(fr, false, ":status", "200", "content-type", "application/grpc")
			_ = fr.WriteData(1, false, []byte{0, 0, 1, 0, 0}) // a 64 KiB message, then its bytes one at a time
			flood(func() error { return fr.WriteData(1, false, []byte{0}) })
		}), differs: tooManyFrames},
		// Messages of nothing, one after another: the second is the
		// unary call's error.
		{name: "empty messages, one by one", port: serveH2(t, func(fr *http2.Framer) {
			writeHeaders(fr, false, ":status", "200", "content-type", "application/grpc")
			flood(func() error { return fr.WriteData(1, false, []byte{0}) })
		})},
		// A message whose flag is no format, then the connection ends:
		// the message's flaw is the answer.
		{name: "a bad message, then the end", port: serveH2(t, func(fr *http2.Framer) {
			writeHeaders(fr, false, ":status", "200", "content-type", "application/grpc")
			_ = fr.WriteData(1, false, []byte{0x30, 0, 0, 0, 2, 0x30, 0x30})
		})},
		{name: "a flood of empty CONTINUATION", port: serveH2(t, func(fr *http2.Framer) {
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hpackFields(":status", "200")})
			flood(func() error { return fr.WriteContinuation(1, false, nil) })
		}), differs: tooManyFrames},
		{name: "a flood of WINDOW_UPDATE", port: serveH2(t, func(fr *http2.Framer) {
			flood(func() error { return fr.WriteWindowUpdate(0, 1) })
		}), differs: tooManyFrames},
		// Full frames for a stream that is not the call's: only the
		// exchange's byte budget ends them.
		{name: "a flood of DATA on another stream", port: serveH2(t, func(fr *http2.Framer) {
			frame := make([]byte, 16<<10)
			flood(func() error { return fr.WriteData(3, false, frame) })
		}), budget: true, differs: fmt.Sprintf("error: health rpc probe failed: rpc error: code = Unavailable desc = error reading from server: the server sent over %d bytes", 2*grpcprobe.MaxHeaderListBytes+2*(grpcprobe.MaxReplyBytes+5+1024))},
		// The bound is on frames that carry little: a reply cut into the
		// smallest frames still comes through.
		{name: "a reply in 1-byte DATA frames", port: serveH2(t, func(fr *http2.Framer) {
			writeHeaders(fr, false, ":status", "200", "content-type", "application/grpc")
			for _, b := range reply {
				_ = fr.WriteData(1, false, []byte{b})
			}
			writeHeaders(fr, true, "grpc-status", "0")
			waitClosed(fr)
		})},
		// A SETTINGS_MAX_FRAME_SIZE no peer may send: grpc-go ignores it,
		// and so does the direct client.
		{name: "settings with MAX_FRAME_SIZE 0", port: serveH2Raw(t, func(fr *http2.Framer) {
			_ = fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 0})
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					return
				}
				if d, ok := f.(*http2.DataFrame); ok && d.StreamEnded() {
					break
				}
			}
			writeHeaders(fr, false, ":status", "200", "content-type", "application/grpc")
			_ = fr.WriteData(1, false, reply)
			writeHeaders(fr, true, "grpc-status", "0")
			waitClosed(fr)
		})},
		{name: "goaway before the call", port: serveH2(t, func(fr *http2.Framer) {
			_ = fr.WriteGoAway(0, http2.ErrCodeNo, nil)
			waitClosed(fr)
		}), differs: "error: health rpc probe failed: rpc error: code = Unavailable desc = the stream is rejected because server is draining the connection"},
	}
	const timeout, budgetTimeout = 300 * time.Millisecond, 30 * time.Second
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantRes, wantOut, wantErr := grpcprobe.ProbeWithGRPCGo(context.Background(), "127.0.0.1", tc.port, tc.service, timeout)
			ours := timeout
			if tc.budget {
				ours = budgetTimeout
			}
			res, out, err := grpcprobe.Probe(context.Background(), "127.0.0.1", tc.port, tc.service, ours)
			if tc.differs != "" {
				if res != probe.Failure || out != tc.differs || err != nil {
					t.Fatalf("Probe = (%s, %q, %v), want (failure, %q) where grpc-go says (%s, %q)", res, out, err, tc.differs, wantRes, wantOut)
				}
				return
			}
			if res != wantRes || out != wantOut || (err == nil) != (wantErr == nil) {
				t.Fatalf("Probe = (%s, %q, %v)\ngrpc-go = (%s, %q, %v)", res, out, err, wantRes, wantOut, wantErr)
			}
			t.Logf("both: %s %q", res, out)
		})
	}
}

// tooManyFrames is the direct client's answer to frames that carry next
// to nothing, as many as the server can write.
const tooManyFrames = "error: health rpc probe failed: rpc error: code = Unavailable desc = error reading from server: the server sent over 200 frames carrying under 1024 bytes each"

// flood writes frames until the client goes away.
func flood(write func() error) {
	for write() == nil {
	}
}

// pingFlood answers every connection with its SETTINGS and then pings (or
// ping acknowledgements), as fast as it can write them, reading whatever
// comes.
func pingFlood(t *testing.T, ack bool) int {
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	_ = fr.WriteSettings()
	settings := append([]byte(nil), b.Bytes()...)
	b.Reset()
	for range 4096 {
		_ = fr.WritePing(ack, [8]byte{})
	}
	pings := b.Bytes()
	return probetest.ServePort(t, func(c net.Conn) {
		go func() { _, _ = io.Copy(io.Discard, c) }()
		if _, err := c.Write(settings); err != nil {
			return
		}
		for {
			if _, err := c.Write(pings); err != nil {
				return
			}
		}
	})
}

// failingHealth answers every Check with st.
type failingHealth struct {
	healthpb.UnimplementedHealthServer
	st *status.Status
}

func (h failingHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return nil, h.st.Err()
}

func grpcMessage(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 5, 5+len(b))
	binary.BigEndian.PutUint32(out[1:], uint32(len(b)))
	return append(out, b...)
}

// grpcReply answers with gRPC's headers, body and a grpc-status trailer.
func grpcReply(body []byte, grpcStatus string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, http.NoBody, 0))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		w.Header().Set("Grpc-Status", grpcStatus)
	}
}

// serveHTTP serves h over HTTP/1 or, with h2, over HTTP/2 without TLS.
func serveHTTP(t *testing.T, h2 bool, h http.HandlerFunc) int {
	t.Helper()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}
	if h2 {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// serveH2 answers every connection as an HTTP/2 server would up to the
// call — its SETTINGS, then reading the client's frames until the call's
// request ended — and then plays script.
func serveH2(t *testing.T, script func(fr *http2.Framer)) int {
	return serveH2Raw(t, func(fr *http2.Framer) {
		if fr.WriteSettings() != nil || !awaitCall(fr) {
			return
		}
		script(fr)
	})
}

// serveH2Raw reads each connection's client preface and hands it to
// script as a framer that writes at once.
func serveH2Raw(t *testing.T, script func(fr *http2.Framer)) int {
	return serveH2Conn(t, func(_ net.Conn, fr *http2.Framer) { script(fr) })
}

// serveH2Conn is serveH2Raw handing the script the connection too.
func serveH2Conn(t *testing.T, script func(c net.Conn, fr *http2.Framer)) int {
	return probetest.ServePort(t, h2Conn(script))
}

// h2Conn is serveH2Conn's handler of a connection.
func h2Conn(script func(c net.Conn, fr *http2.Framer)) func(net.Conn) {
	return func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := io.ReadFull(br, make([]byte, len(http2.ClientPreface))); err != nil {
			return
		}
		fr := http2.NewFramer(c, br)
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		script(c, fr)
	}
}

// awaitCall reads the client's frames until its call's request ended and
// it acknowledged the server's settings (before the call from grpc-go,
// after it from the direct client): a script that closed with the ack
// unread would reset the connection, and the client read ECONNRESET or
// EOF as the race went. False: the connection failed first.
func awaitCall(fr *http2.Framer) bool {
	for sent, acked := false, false; !sent || !acked; {
		f, err := fr.ReadFrame()
		if err != nil {
			return false
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			sent = sent || f.StreamID == 1 && f.StreamEnded()
		case *http2.SettingsFrame:
			acked = acked || f.IsAck()
		}
	}
	return true
}

func writeHeaders(fr *http2.Framer, end bool, kv ...string) {
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hpackFields(kv...), EndStream: end, EndHeaders: true})
}

// waitClosed keeps the connection until the client closes it.
func waitClosed(fr *http2.Framer) {
	for {
		if _, err := fr.ReadFrame(); err != nil {
			return
		}
	}
}

func hpackFields(kv ...string) []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for i := 0; i+1 < len(kv); i += 2 {
		_ = enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return b.Bytes()
}
