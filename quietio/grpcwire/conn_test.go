package grpcwire_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"golang.org/x/sys/unix"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/quietio/grpcwire"
)

var limits = grpcwire.Limits{MaxReply: 1 << 10, MaxHeaderList: 16 << 10}

// server is the far end of a Conn, played frame by frame by the test.
type server struct {
	t  *testing.T
	br *bufio.Reader
	fr *http2.Framer
}

// preface reads the client preface, which comes with the first call.
func (s *server) preface() {
	s.t.Helper()
	if _, err := io.ReadFull(s.br, make([]byte, len(http2.ClientPreface))); err != nil {
		s.t.Fatal(err)
	}
}

// pair connects a Conn to a server over a unix socket; nc is the Conn's
// end of it.
func pair(t *testing.T) (c *grpcwire.Conn, s *server, nc net.Conn) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err = net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c = grpcwire.NewConn(nc, limits)
	t.Cleanup(func() { _ = c.Close(); _ = sc.Close() })
	s = &server{t: t, br: bufio.NewReader(sc)}
	s.fr = http2.NewFramer(sc, s.br)
	s.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	return c, s, nc
}

// A PING's and a GOAWAY's (without debug data) frame: a header and 8 bytes.
const pingFrame, goAwayFrame = 9 + 8, 9 + 8

// awaitUnread waits until n bytes the client has not read are in its
// socket, nc: what the server wrote has arrived, and a call finds it
// without waiting. The client must have read all that came before.
func awaitUnread(t *testing.T, nc net.Conn, n int, what string) {
	t.Helper()
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, n)
	testutil.WaitFor(t, what+" in the client's socket", func() bool {
		var got int
		if err := rc.Control(func(fd uintptr) {
			got, _, err = unix.Recvfrom(int(fd), buf, unix.MSG_PEEK|unix.MSG_DONTWAIT)
		}); err != nil {
			t.Fatal(err)
		}
		if err != nil && !errors.Is(err, unix.EAGAIN) {
			t.Fatal(err)
		}
		return got == n
	})
}

// call runs a Health/Check on c in the background.
func call(c *grpcwire.Conn, service string) <-chan error {
	return callWithin(c, service, 10*time.Second)
}

// callWithin runs a Health/Check on c in the background, with a deadline
// d away.
func callWithin(c *grpcwire.Conn, service string, d time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var resp healthpb.HealthCheckResponse
		done <- c.Call(ctx, "/grpc.health.v1.Health/Check", "localhost", "test", &healthpb.HealthCheckRequest{Service: service}, &resp)
	}()
	return done
}

// next reads the client's frames up to one of the kind wanted.
func next[F http2.Frame](s *server) F {
	s.t.Helper()
	for {
		f, err := s.fr.ReadFrame()
		if err != nil {
			s.t.Fatalf("server: %v", err)
		}
		if f, ok := f.(F); ok {
			return f
		}
	}
}

// answer reads a call's request and answers it SERVING.
func (s *server) answer() uint32 {
	s.t.Helper()
	id := next[*http2.MetaHeadersFrame](s).StreamID
	next[*http2.DataFrame](s)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	_ = enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/grpc"})
	_ = s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true})
	msg, _ := proto.Marshal(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING})
	body := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	copy(body[5:], msg)
	_ = s.fr.WriteData(id, false, body)
	hb.Reset()
	_ = enc.WriteField(hpack.HeaderField{Name: "grpc-status", Value: "0"})
	_ = s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: true})
	return id
}

func TestConnKeptBetweenCalls(t *testing.T) {
	c, s, nc := pair(t)
	first := call(c, "a")
	s.preface()
	_ = s.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 64})
	if id := s.answer(); id != 1 {
		t.Errorf("first call on stream %d, want 1", id)
	}
	if err := <-first; err != nil {
		t.Fatalf("first call: %v", err)
	}

	t.Run("a ping while idle is answered before the next call", func(t *testing.T) {
		_ = s.fr.WritePing(false, [8]byte{7})
		awaitUnread(t, nc, pingFrame, "the ping")
		done := call(c, "b")
		for {
			f, err := s.fr.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := f.(*http2.PingFrame); ok && p.IsAck() && p.Data == [8]byte{7} {
				break
			}
			if _, ok := f.(*http2.MetaHeadersFrame); ok {
				t.Fatal("the call came before the ping's answer")
			}
		}
		if id := s.answer(); id != 3 {
			t.Errorf("second call on stream %d, want 3", id)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a request over the server's window is not sent", func(t *testing.T) {
		if err := <-call(c, string(make([]byte, 100))); !errors.Is(err, grpcwire.ErrNoRoom) {
			t.Fatalf("err = %v, want ErrNoRoom", err)
		}
		if !c.Usable() {
			t.Fatal("the connection is spent, want it kept")
		}
	})
	t.Run("a MAX_FRAME_SIZE of 0 holds no call past its deadline", func(t *testing.T) {
		// Invalid (RFC 9113 §6.5.2) and ignored, as grpc-go ignores it:
		// the request still goes out in frames of the initial size.
		_ = s.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 0})
		const deadline = time.Second
		done := callWithin(c, "after-zero", deadline)
		id := s.answer()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("call on stream %d: %v", id, err)
			}
		case <-time.After(2 * deadline):
			t.Fatalf("the call is still running %v past its deadline", deadline)
		}
	})
	t.Run("a GOAWAY while idle: the next call is not sent", func(t *testing.T) {
		_ = s.fr.WriteGoAway(3, http2.ErrCodeNo, nil)
		awaitUnread(t, nc, goAwayFrame, "the GOAWAY")
		if err := <-call(c, "c"); !errors.Is(err, grpcwire.ErrSpent) {
			t.Fatalf("err = %v, want ErrSpent", err)
		}
		if c.Usable() {
			t.Error("the connection is usable after GOAWAY")
		}
	})
}
