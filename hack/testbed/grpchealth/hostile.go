package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Hostile targets (issue 26): what a tenant's gRPC-probe target can do to
// the prober's HTTP/2 client, the frames written by hand (this source
// builds with the standard library only, which keeps its HTTP/2 to
// itself). Each connection gets the server's SETTINGS and then the mode's
// frames, and is kept until the client closes it; whatever the client
// sends is read and dropped, so nothing it writes ever blocks on this end.
var hostileModes = map[string]func(net.Conn) error{
	// A PING frame after another, as fast as the connection takes them,
	// and never an answer to the call.
	"ping-flood": func(c net.Conn) error {
		return repeat(c, settings, frame(typePing, 0, 0, make([]byte, 8)))
	},
	// The call's reply headers, never ended: CONTINUATION frames of valid
	// 4 KB fields, endlessly.
	"header-flood": func(c net.Conn) error {
		field := literal("x-pad", strings.Repeat("a", 4000))
		pad := bytes.Repeat(field, maxFrame/len(field))
		open := frame(typeHeaders, 0, 1, replyHeaders)
		return repeat(c, slices.Concat(settings, open), frame(typeContinuation, 0, 1, pad))
	},
	// The call's reply headers, then DATA frames of zeros (empty gRPC
	// messages, one after another), never ending the stream.
	"data-flood": func(c net.Conn) error {
		open := frame(typeHeaders, flagEndHeaders, 1, replyHeaders)
		return repeat(c, slices.Concat(settings, open), frame(typeData, 0, 1, make([]byte, maxFrame)))
	},
	// Frames that carry nothing and need no answer (issue 41): the call's
	// reply headers, then empty DATA frames, never ending the stream.
	"empty-data-flood": func(c net.Conn) error {
		open := frame(typeHeaders, flagEndHeaders, 1, replyHeaders)
		return repeat(c, slices.Concat(settings, open), frame(typeData, 0, 1, nil))
	},
	// The call's reply headers, never ended: empty CONTINUATION frames,
	// which add nothing to the header list whose size bounds them.
	"empty-continuation-flood": func(c net.Conn) error {
		open := frame(typeHeaders, 0, 1, replyHeaders)
		return repeat(c, slices.Concat(settings, open), frame(typeContinuation, 0, 1, nil))
	},
	// WINDOW_UPDATE frames for the connection, one byte each.
	"window-update-flood": func(c net.Conn) error {
		return repeat(c, settings, frame(typeWindowUpdate, 0, 0, []byte{0, 0, 0, 1}))
	},
	// GOAWAY right after SETTINGS, refusing every stream (the last one
	// processed is 0), then silence with the connection open.
	"goaway": func(c net.Conn) error {
		goaway := frame(typeGoAway, 0, 0, make([]byte, 8)) // last stream 0, NO_ERROR
		_, err := c.Write(slices.Concat(settings, goaway))
		return err
	},
}

// HTTP/2 frame types and flags (RFC 9113 §6), and the largest frame a
// peer must take.
const (
	typeData         = 0x0
	typeHeaders      = 0x1
	typeSettings     = 0x4
	typePing         = 0x6
	typeGoAway       = 0x7
	typeWindowUpdate = 0x8
	typeContinuation = 0x9
	flagEndHeaders   = 0x4
	maxFrame         = 16 << 10
)

var (
	// settings is the server's empty SETTINGS: every default.
	settings = frame(typeSettings, 0, 0, nil)
	// replyHeaders are a gRPC reply's: :status 200 (static index 8) and
	// its content-type.
	replyHeaders = append([]byte{0x88}, literal("content-type", "application/grpc")...)
)

// serveHostile answers every connection on ln as mode says.
func serveHostile(ln net.Listener, mode string) {
	play, ok := hostileModes[mode]
	if !ok {
		fmt.Fprintf(os.Stderr, "grpc-health: unknown -hostile mode %q\n", mode)
		os.Exit(2)
	}
	serveEach(ln, func(c net.Conn) {
		gone := make(chan struct{})
		go func() {
			_, _ = io.Copy(io.Discard, c)
			close(gone)
		}()
		_ = play(c)
		<-gone
	})
}

// repeat writes first, then again and again, batched, until the client
// goes away.
func repeat(c net.Conn, first, again []byte) error {
	if _, err := c.Write(first); err != nil {
		return err
	}
	batch := bytes.Repeat(again, max(1, 64<<10/len(again)))
	for {
		if _, err := c.Write(batch); err != nil {
			return err
		}
	}
}

// frame is one HTTP/2 frame: a 24-bit length, type, flags and stream
// (RFC 9113 §4.1), then the payload.
func frame(typ, flags byte, stream uint32, payload []byte) []byte {
	n := len(payload)
	b := []byte{byte(n >> 16), byte(n >> 8), byte(n), typ, flags, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[5:], stream)
	return append(b, payload...)
}

// literal is an HPACK header field, literal without indexing with a new
// name and no Huffman coding (RFC 7541 §6.2.2).
func literal(name, value string) []byte {
	b := append(hpackInt([]byte{0}, len(name)), name...)
	return append(hpackInt(b, len(value)), value...)
}

// hpackInt appends n as an HPACK string length: an integer with a 7-bit
// prefix (RFC 7541 §5.1), the Huffman bit clear.
func hpackInt(b []byte, n int) []byte {
	if n < 127 {
		return append(b, byte(n))
	}
	b, n = append(b, 127), n-127
	for ; n >= 128; n >>= 7 {
		b = append(b, byte(n&127|128))
	}
	return append(b, byte(n))
}

// held keeps fullBacklog's own connections (and so their place in the
// accept queue) for the life of the process.
var held []net.Conn

// fullBacklog listens on port with room for one connection in its accept
// queue and never accepts. It fills the queue with connections of its own
// until one of them hangs; from then on the kernel drops every SYN that
// comes: a handshake that never completes.
func fullBacklog(port int) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		err = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	}
	if err == nil {
		err = syscall.Bind(fd, &syscall.SockaddrInet4{Port: port})
	}
	if err == nil {
		err = syscall.Listen(fd, 0)
	}
	if err != nil {
		log.Fatalf("listen on %d: %v", port, err)
	}
	self := fmt.Sprintf("127.0.0.1:%d", port)
	for {
		c, err := net.DialTimeout("tcp", self, time.Second)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			break // this SYN was dropped: the queue is full
		}
		if err != nil {
			log.Fatal(err)
		}
		held = append(held, c)
	}
	log.Printf("accept queue of :%d full with %d connections; SYNs are dropped from now on", port, len(held))
	for {
		time.Sleep(time.Hour)
	}
}
