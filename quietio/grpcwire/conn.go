// Package grpcwire makes unary gRPC calls over an HTTP/2 connection on the
// calling goroutine: the request goes out in one write, and the reply is
// read frame by frame until its trailers. grpc-go hands the same call
// between the caller, the connection's writer and its reader, and each
// hand-off wakes a thread in an otherwise idle agent, which costs the node
// more than the call (hack/bench/engine).
//
// What a call answers is grpc-go's: its status codes and texts for every
// reply a server can send, and its answers to the server's SETTINGS and
// PINGs. The gRPC probe (a connection per call) and the CRI client's
// ExecSync (connections kept for the next call) test it side by side with
// grpc-go against the same servers.
//
// A Conn carries one call at a time; a caller making calls at once keeps
// a Conn for each.
package grpcwire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Limits bound what one call reads.
type Limits struct {
	// MaxReply bounds a reply message, as grpc-go's MaxCallRecvMsgSize.
	MaxReply uint32
	// MaxHeaderList bounds a reply's headers and trailers.
	MaxHeaderList uint32
}

// Frames the client must answer (PING, SETTINGS) are bounded by count per
// call: answering is the caller working, not waiting, and a flood of them
// within the byte budget held a probe runner busy for tens of milliseconds
// of CPU per run, enough on a saturated node to make other pods' probes
// wait for a P. A server sends a few in one call (its SETTINGS, a PING to
// estimate the bandwidth), never MaxAnswered. grpc-go answers them until
// the deadline.
const MaxAnswered = 100

const (
	maxFrameSize  = 16 << 10 // what the client reads, grpc-go's
	defaultWindow = 65535    // HTTP/2's initial windows
	defaultFrame  = 16 << 10 // HTTP/2's initial frame size
	maxStreamID   = math.MaxInt32
)

// Conn is an HTTP/2 connection that makes one gRPC call at a time.
type Conn struct {
	nc     net.Conn
	lim    Limits
	window uint32 // each reply's flow-control window, and the connection's
	in     *meter // what a call reads, bounded
	br     *bufio.Reader
	bw     *bufio.Writer
	fr     *http2.Framer
	// stop ends the watch on a call's ctx (Watch).
	stop func() bool

	prefaced bool
	nextID   uint32
	// What the server lets the client send: the connection's window left,
	// and each new stream's window.
	sendWindow int64
	peerWindow int64
	// owed is the DATA received since the connection's window was last
	// given back; the next call's write gives it back.
	owed   uint32
	goAway bool
	// goAwayDebug is grpc-go's account of the first GOAWAY, which it
	// adds to the status of a connection that fails after it.
	goAwayDebug string
	broken      bool
	answered    int
}

// NewConn makes a Conn of nc, a connected stream to a gRPC server, which
// it owns from then on. Nothing is written until the first call.
func NewConn(nc net.Conn, lim Limits) *Conn {
	window := lim.MaxReply + 5 + nonGRPCDataMax
	// What a call may read: a reply's headers, message and trailers with
	// room to spare. A server that sends more fails the call where grpc-go
	// would go on reading it until the deadline.
	budget := 2*int64(lim.MaxHeaderList) + 2*int64(window)
	c := &Conn{
		nc: nc, lim: lim, window: window, stop: func() bool { return true },
		nextID: 1, sendWindow: defaultWindow, peerWindow: defaultWindow,
	}
	c.bw = bufio.NewWriterSize(nc, 1<<10) // a request and its frames: a larger one goes out in two writes
	c.br = bufio.NewReaderSize(nc, 4<<10)
	// Above the buffer: the meter sees the frames the Framer reads, not
	// what the buffer read ahead.
	c.in = newMeter(c.br, budget)
	c.fr = http2.NewFramer(c.bw, c.in)
	c.fr.SetMaxReadFrameSize(maxFrameSize)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.MaxHeaderListSize = lim.MaxHeaderList
	return c
}

// Watch has ctx's end (its deadline, or the parent's) interrupt whatever
// waits on the connection until Unwatch: no deadline timers of the
// connection's own, which would outlive the call in the runtime's timer
// heap and wake the process.
func (c *Conn) Watch(ctx context.Context) {
	c.stop = context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
}

// Unwatch ends Watch. A ctx that ended first left the connection's
// deadline past: it carries no more calls.
func (c *Conn) Unwatch() {
	if !c.stop() {
		c.broken = true
	}
	c.stop = func() bool { return true }
}

// Close closes the connection.
func (c *Conn) Close() error {
	c.Unwatch()
	c.broken = true
	return c.nc.Close()
}

// Usable reports whether the connection can carry another call, as far as
// the client knows without reading.
func (c *Conn) Usable() bool {
	return !c.broken && !c.goAway && c.nextID <= maxStreamID
}

// Send writes a call of path with the message msg in one write: on a new
// connection after the client preface and settings, else after giving back
// the connection window the last calls took. An error is the write's.
func (c *Conn) Send(ctx context.Context, path, authority, userAgent string, msg []byte) (*Stream, error) {
	if !c.Usable() {
		return nil, ErrSpent
	}
	body := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	copy(body[5:], msg)
	if int64(len(body)) > min(c.sendWindow, c.peerWindow) {
		return nil, ErrNoRoom
	}
	c.in.reset()
	c.answered = 0
	// Every write goes to the buffer, and the first error ends the call:
	// a frame the Framer refused, or the flush's.
	var werr error
	write := func(err error) {
		if werr == nil {
			werr = err
		}
	}
	if !c.prefaced {
		c.prefaced = true
		_, err := c.bw.WriteString(http2.ClientPreface)
		write(err)
		write(c.fr.WriteSettings(
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: c.window},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: c.lim.MaxHeaderList},
		))
		if c.window > defaultWindow { // a window can only grow
			write(c.fr.WriteWindowUpdate(0, c.window-defaultWindow))
		}
	} else if c.owed > 0 {
		write(c.fr.WriteWindowUpdate(0, c.owed))
		c.owed = 0
	}
	s := &Stream{id: c.nextID, maxReply: c.lim.MaxReply, window: c.window}
	s.deadline, _ = ctx.Deadline()
	c.nextID += 2
	write(c.fr.WriteHeaders(http2.HeadersFrameParam{
		StreamID:      s.id,
		BlockFragment: requestHeaders(ctx, path, authority, userAgent),
		EndHeaders:    true,
	}))
	// DATA frames of HTTP/2's initial size, which every peer must take,
	// whatever its SETTINGS_MAX_FRAME_SIZE says: grpc-go's loopy writer
	// does the same.
	for rest := body; len(rest) > 0; {
		n := min(len(rest), defaultFrame)
		write(c.fr.WriteData(s.id, n == len(rest), rest[:n]))
		rest = rest[n:]
	}
	c.sendWindow -= int64(len(body))
	write(c.bw.Flush())
	if werr != nil {
		c.broken = true
		return nil, werr
	}
	return s, nil
}

// AwaitSettings reads the server's first frame, which must be its
// SETTINGS (ErrNotReady); any other error is the read's.
func (c *Conn) AwaitSettings() error {
	f, err := c.fr.ReadFrame()
	if err != nil {
		c.broken = true
		return err
	}
	s, ok := f.(*http2.SettingsFrame)
	if !ok {
		c.broken = true
		return ErrNotReady
	}
	if !s.IsAck() {
		c.settings(s)
		return c.fr.WriteSettingsAck()
	}
	return nil
}

// Await reads frames until s ends, answering the server's settings and
// pings as grpc-go does, and unmarshals the reply into m. An error is the
// call's status, as grpc-go's. The connection carries further calls only
// when the server ended the stream.
func (c *Conn) Await(s *Stream, m proto.Message) error {
	s.into = m
	for {
		// Answers go out before waiting for more: once the frames read so
		// far are handled.
		if c.bw.Buffered() > 0 && c.br.Buffered() == 0 {
			if err := c.bw.Flush(); err != nil {
				return c.readError(err)
			}
		}
		f, err := c.fr.ReadFrame()
		var se http2.StreamError
		switch {
		case errors.As(err, &se) && se.StreamID == s.id:
			// A frame of the call's the framer refused (and consumed):
			// grpc-go ends the call, not the connection.
			c.broken = true
			return errFrame(se, c.fr.ErrorDetail())
		case errors.As(err, &se):
			continue // another stream's: grpc-go drops it
		case err != nil:
			return c.readError(err)
		}
		done, err := c.onFrame(f, s)
		if !done {
			if err != nil {
				return c.readError(err)
			}
			continue
		}
		if !s.ended(f) {
			c.broken = true // the rest of the stream may still come
		}
		if err != nil {
			return err
		}
		return s.reply()
	}
}

// onFrame handles a frame for the connection, or for s when it is s's.
// done means s ended, err then its status; err alone is the connection's.
func (c *Conn) onFrame(f http2.Frame, s *Stream) (done bool, err error) {
	ours := s != nil && f.Header().StreamID == s.id
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			c.settings(f)
			err = c.answer(c.fr.WriteSettingsAck)
		}
	case *http2.PingFrame:
		if !f.IsAck() {
			err = c.answer(func() error { return c.fr.WritePing(true, f.Data) })
		}
	case *http2.WindowUpdateFrame:
		if f.StreamID == 0 {
			c.sendWindow += int64(f.Increment)
		}
	case *http2.MetaHeadersFrame:
		if ours {
			done, err = s.onHeaders(f)
		}
	case *http2.DataFrame:
		c.owed += f.Length // the connection's window, whichever stream
		if ours {
			done, err = s.onData(f)
		}
	case *http2.RSTStreamFrame:
		if ours {
			done, err = true, s.onReset(f)
		}
	case *http2.GoAwayFrame:
		// grpc-go keeps the first GOAWAY's account, and takes one naming
		// an even (client) stream as the connection's failure instead.
		if first := !c.goAway; first && (f.LastStreamID == 0 || f.LastStreamID%2 == 1) {
			c.goAwayDebug = fmt.Sprintf("code: %s", f.ErrCode)
			if len(f.DebugData()) > 0 {
				c.goAwayDebug = fmt.Sprintf("code: %s, debug data: %q", f.ErrCode, string(f.DebugData()))
			}
		}
		c.goAway = true
		if s != nil && f.LastStreamID < s.id {
			// Refused unprocessed: grpc-go would retry the call on a new
			// connection; the caller decides.
			done, err = true, errDraining()
		}
	}
	return done, err
}

// settings takes what the server's SETTINGS tell the client's sending:
// each new stream's window, which the Framer checked (a value over 2^31-1
// fails the read, a connection error). The client writes frames of the
// initial size, whatever SETTINGS_MAX_FRAME_SIZE says, and grpc-go's
// client too ignores that setting, valid or not.
func (c *Conn) settings(f *http2.SettingsFrame) {
	if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
		c.peerWindow = int64(v)
	}
}

// answer writes the answer to a frame of the server's, up to MaxAnswered.
func (c *Conn) answer(write func() error) error {
	if c.answered++; c.answered > MaxAnswered {
		return errTooManyToAnswer
	}
	return write()
}

// readError is a broken connection's status: the deadline's, or grpc-go's
// for a connection that failed under the call.
func (c *Conn) readError(err error) error {
	c.broken = true
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errDeadline()
	}
	return errRead(err, c.goAwayDebug)
}

// ended: f ended s's stream on the server's side too (its trailers, or a
// reset), so nothing more of it will come.
func (s *Stream) ended(f http2.Frame) bool {
	switch f := f.(type) {
	case *http2.RSTStreamFrame:
		return f.StreamID == s.id
	case *http2.MetaHeadersFrame:
		return f.StreamID == s.id && f.StreamEnded() && s.status != nil
	}
	return false
}

// requestHeaders are grpc-go's for a call, in its order, encoded without
// the dynamic table (whatever table size the server's settings ask for,
// which may come after the call is sent).
func requestHeaders(ctx context.Context, path, authority, userAgent string) []byte {
	var b strings.Builder
	enc := hpack.NewEncoder(&b)
	enc.SetMaxDynamicTableSizeLimit(0)
	fields := []hpack.HeaderField{
		{Name: ":method", Value: "POST"},
		{Name: ":scheme", Value: "http"},
		{Name: ":path", Value: path},
		{Name: ":authority", Value: authority},
		{Name: "content-type", Value: "application/grpc"},
		{Name: "user-agent", Value: userAgent},
		{Name: "te", Value: "trailers"},
	}
	if dl, ok := ctx.Deadline(); ok {
		fields = append(fields, hpack.HeaderField{Name: "grpc-timeout", Value: encodeTimeout(time.Until(dl))})
	}
	for _, f := range fields {
		_ = enc.WriteField(f)
	}
	return []byte(b.String())
}

// encodeTimeout is grpc-go's grpc-timeout value: the finest unit that
// holds the time left in eight digits, rounded up.
func encodeTimeout(t time.Duration) string {
	if t <= 0 {
		return "0n"
	}
	const most = 1e8 - 1
	for _, u := range []struct {
		d    time.Duration
		unit string
	}{{time.Nanosecond, "n"}, {time.Microsecond, "u"}, {time.Millisecond, "m"}, {time.Second, "S"}, {time.Minute, "M"}} {
		if n := divUp(t, u.d); n <= most {
			return strconv.FormatInt(n, 10) + u.unit
		}
	}
	return strconv.FormatInt(divUp(t, time.Hour), 10) + "H"
}

func divUp(d, r time.Duration) int64 {
	if d%r > 0 {
		return int64(d/r + 1)
	}
	return int64(d / r)
}

// Call makes a call of path on a connection kept between calls: what the
// server sent meanwhile is handled first, without waiting for more, then
// req goes out and the reply comes into reply. ErrSpent and ErrNoRoom
// mean nothing was sent: the call can go out on another connection. Any
// other error is the call's status, as grpc-go's.
func (c *Conn) Call(ctx context.Context, path, authority, userAgent string, req, reply proto.Message) error {
	msg, err := proto.Marshal(req)
	if err != nil {
		return errMarshal(err)
	}
	c.Watch(ctx)
	defer c.Unwatch()
	fresh := !c.prefaced
	if !fresh && !c.idle() {
		return ErrSpent
	}
	s, err := c.Send(ctx, path, authority, userAgent, msg)
	switch {
	case errors.Is(err, ErrSpent) || errors.Is(err, ErrNoRoom):
		return err
	case err != nil && ctx.Err() != nil:
		return status.FromContextError(ctx.Err()).Err()
	case err != nil && !fresh:
		// The server closed the connection since the last call (a write
		// to it fails at once): it took nothing of this one.
		return ErrSpent
	case err != nil:
		return connectionError(err.Error())
	}
	if fresh {
		if err := c.AwaitSettings(); err != nil {
			if ctx.Err() != nil {
				return status.FromContextError(ctx.Err()).Err()
			}
			return connectionError(err.Error())
		}
	}
	if err := c.Await(s, reply); err != nil {
		if ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
		return err
	}
	return nil
}

// DialError is grpc-go's status for a call whose connection could not be
// dialled: it fails at once.
func DialError(err error) error {
	return connectionError("Error while dialing: " + err.Error())
}

// idle handles what the server sent since the last call (its pings,
// window updates, a GOAWAY, its closing) without waiting for more, and
// reports whether the connection can carry another call.
func (c *Conn) idle() bool {
	c.answered = 0
	for c.Usable() && (c.br.Buffered() > 0 || readable(c.nc)) {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.broken = true
			break
		}
		if _, err := c.onFrame(f, nil); err != nil {
			c.broken = true
		}
	}
	return c.Usable()
}
