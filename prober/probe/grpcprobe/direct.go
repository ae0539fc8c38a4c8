package grpcprobe

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/probelet/probelet/prober/probe"
)

// checkDirect is one Health/Check on the calling goroutine: dial, write
// the connection preface, settings and the request in one write, and read
// frames until the reply's trailers. grpc-go hands the same exchange
// between its resolver, balancer, connection reader, writer and the caller,
// and each hand-off wakes a thread in an otherwise idle agent, which costs
// the node more than the exchange (hack/bench/engine).
//
// What the probe sees is grpc-go's, as the kubelet uses it: a connection
// is ready once the server's SETTINGS came; until then a failed attempt is
// retried with grpc-go's backoff and only the deadline ends the wait
// (a *connectError); the call's failures are grpc-go's status errors, with
// its codes and texts (direct_test.go runs both side by side against the
// same targets). The request goes out before the server's SETTINGS, which
// HTTP/2 allows and no server can tell from grpc-go's.
func checkDirect(ctx context.Context, addr, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	msg, err := proto.Marshal(&healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return 0, status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err)
	}
	for failures := 0; ; failures++ {
		x, err := open(ctx, addr, msg)
		if err == nil {
			st, err := x.await()
			x.close()
			return st, err
		}
		if ctx.Err() != nil {
			return 0, &connectError{err: ctx.Err()}
		}
		if !sleep(ctx, connectBackoff(failures)) {
			return 0, &connectError{err: ctx.Err()}
		}
	}
}

// connectError is a connection that never got ready before the deadline.
type connectError struct{ err error }

func (e *connectError) Error() string { return e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

// connectBackoff is grpc-go's default wait after the nth failed connection
// attempt: 1 s, then ×1.6 each, ±20%, at most 120 s.
func connectBackoff(n int) time.Duration {
	const base, multiplier, jitter, most = float64(time.Second), 1.6, 0.2, float64(120 * time.Second)
	if n == 0 {
		return time.Second
	}
	b := base
	for ; b < most && n > 0; n-- {
		b *= multiplier
	}
	b = min(b, most) * (1 + jitter*(rand.Float64()*2-1))
	return time.Duration(b)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// The exchange's limits: grpc-go's 16 KiB frames, a flow-control window
// that takes a reply of MaxReplyBytes at once, and what a whole exchange
// may read — a reply's headers, message and trailers with room to spare;
// a target that sends more fails the call where grpc-go would go on
// answering it until the deadline. Frames the client must answer (PING,
// SETTINGS) are bounded by count too: answering is the probe working, not
// waiting, and a flood of them within the byte budget held a runner busy
// for tens of milliseconds of CPU per run, enough on a saturated node to
// make other pods' probes wait for a P. A server sends a few in one call
// (its SETTINGS, a PING to estimate the bandwidth), never maxAnswered.
const (
	maxAnswered    = 100
	maxFrameSize   = 16 << 10
	replyWindow    = MaxReplyBytes + 5 + nonGRPCDataMax
	defaultWindow  = 65535
	maxExchange    = 2*MaxHeaderListBytes + 2*replyWindow
	nonGRPCDataMax = 1024 // grpc-go keeps this much of a non-gRPC reply's body
	streamID       = 1
)

// exchange is one connection with the call on it under way.
type exchange struct {
	conn net.Conn
	fr   *http2.Framer
	bw   *bufio.Writer
	br   *bufio.Reader
	stop func() bool
	// The reply so far.
	headers bool   // a gRPC reply's headers came
	encoded string // the reply's grpc-encoding
	data    []byte // the reply's message bytes, prefix included
	nonGRPC *status.Status
	status  *status.Status // from the trailers
	// deadline is the call's, for a reset that cancels it.
	deadline time.Time
	// answered counts the server's frames answered (maxAnswered).
	answered int
}

var errNotReady = errors.New("the server's first frame was not its SETTINGS")

// open dials addr, sends the preface, settings and the call, and reads the
// server's SETTINGS: what grpc-go waits for before it calls a connection
// ready. Any failure before then is a failed connection attempt.
func open(ctx context.Context, addr string, msg []byte) (*exchange, error) {
	conn, err := dialer.DialRaw(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	x := &exchange{conn: conn}
	// ctx's end (its deadline, or the parent's) interrupts whatever waits
	// on the connection: no deadline timers of the connection's own, which
	// would outlive it in the runtime's timer heap and wake the process.
	x.stop = context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	x.deadline, _ = ctx.Deadline()
	x.bw = bufio.NewWriterSize(conn, 1<<10)
	// Reads past maxExchange fail: a flood of frames ends the call.
	x.br = bufio.NewReaderSize(&probe.LimitedReader{R: conn, N: maxExchange, Err: errExchangeTooLarge}, 4<<10)
	x.fr = http2.NewFramer(x.bw, x.br)
	x.fr.SetMaxReadFrameSize(maxFrameSize)
	x.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	x.fr.MaxHeaderListSize = MaxHeaderListBytes
	if err := x.send(ctx, addr, msg); err != nil {
		x.close()
		return nil, err
	}
	f, err := x.fr.ReadFrame()
	if err != nil {
		x.close()
		return nil, err
	}
	s, ok := f.(*http2.SettingsFrame)
	if !ok {
		x.close()
		return nil, errNotReady
	}
	if !s.IsAck() {
		if err := x.fr.WriteSettingsAck(); err != nil {
			x.close()
			return nil, err
		}
	}
	return x, nil
}

// send writes the client preface, settings and the call in one write.
func (x *exchange) send(ctx context.Context, addr string, msg []byte) error {
	if _, err := x.bw.WriteString(http2.ClientPreface); err != nil {
		return err
	}
	_ = x.fr.WriteSettings(
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: replyWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: MaxHeaderListBytes},
	)
	_ = x.fr.WriteWindowUpdate(0, replyWindow-defaultWindow)
	_ = x.fr.WriteHeaders(http2.HeadersFrameParam{
		StreamID:      streamID,
		BlockFragment: requestHeaders(ctx, addr),
		EndHeaders:    true,
	})
	body := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	copy(body[5:], msg)
	_ = x.fr.WriteData(streamID, true, body)
	return x.bw.Flush()
}

// userAgent is what grpc-go sends for the kubelet's WithUserAgent.
var userAgent = UserAgent + " grpc-go/" + grpc.Version

// requestHeaders are grpc-go's for the call, in its order, encoded
// without the dynamic table (whatever table size the server's settings
// ask for, which come after the call is sent).
func requestHeaders(ctx context.Context, addr string) []byte {
	var b strings.Builder
	enc := hpack.NewEncoder(&b)
	enc.SetMaxDynamicTableSizeLimit(0)
	fields := []hpack.HeaderField{
		{Name: ":method", Value: "POST"},
		{Name: ":scheme", Value: "http"},
		{Name: ":path", Value: "/grpc.health.v1.Health/Check"},
		{Name: ":authority", Value: addr},
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

func (x *exchange) close() {
	x.stop()
	_ = x.conn.Close()
}

// await reads frames until the call ends, answering the server's settings
// and pings as grpc-go does, and returns the reply's status.
func (x *exchange) await() (healthpb.HealthCheckResponse_ServingStatus, error) {
	for {
		// Answers go out before waiting for more: once the frames read so
		// far are handled.
		if x.bw.Buffered() > 0 && x.br.Buffered() == 0 {
			if err := x.bw.Flush(); err != nil {
				return 0, x.readError(err)
			}
		}
		f, err := x.fr.ReadFrame()
		if err != nil {
			return 0, x.readError(err)
		}
		var done bool
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				err = x.answer(x.fr.WriteSettingsAck)
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				err = x.answer(func() error { return x.fr.WritePing(true, f.Data) })
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == streamID {
				done, err = x.onHeaders(f)
			}
		case *http2.DataFrame:
			if f.StreamID == streamID {
				done, err = x.onData(f)
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == streamID {
				done, err = true, x.onReset(f)
			}
		case *http2.GoAwayFrame:
			if f.LastStreamID < streamID {
				// Refused unprocessed: grpc-go would retry the call on a
				// new connection; probelet fails it and probes again
				// next period (README).
				done, err = true, status.Error(codes.Unavailable, "the stream is rejected because server is draining the connection")
			}
		}
		if done {
			if err != nil {
				return 0, err
			}
			return x.reply()
		}
		if err != nil {
			return 0, x.readError(err)
		}
	}
}

// answer writes the answer to a frame of the server's, up to maxAnswered.
func (x *exchange) answer(write func() error) error {
	if x.answered++; x.answered > maxAnswered {
		return errTooManyToAnswer
	}
	return write()
}

// readError is a broken connection's status: the deadline's, or grpc-go's
// for a connection that failed under the call.
func (x *exchange) readError(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
	}
	return status.Error(codes.Unavailable, "error reading from server: "+err.Error())
}

// onHeaders is grpc-go's operateHeaders for the call's stream: the reply's
// headers, or its trailers (or both at once), or a reply that is not gRPC.
func (x *exchange) onHeaders(f *http2.MetaHeadersFrame) (done bool, err error) {
	end := f.StreamEnded()
	if x.headers && !end {
		return true, status.Error(codes.Internal, "a HEADERS frame cannot appear in the middle of a stream")
	}
	if f.Truncated {
		return true, status.Error(codes.Internal, "peer header list size exceeded limit")
	}
	if x.nonGRPC != nil {
		if end {
			return true, x.nonGRPCStatus().Err()
		}
		return false, nil
	}
	var (
		isGRPC         = x.headers
		contentTypeErr = "malformed header: missing HTTP content-type"
		grpcCode       = codes.Unknown
		grpcMessage    string
		httpStatus     string
		encoding       string
	)
	for _, hf := range f.Fields {
		switch hf.Name {
		case "content-type":
			if !validContentType(hf.Value) {
				contentTypeErr = fmt.Sprintf("transport: received unexpected content-type %q", hf.Value)
				break
			}
			contentTypeErr, isGRPC = "", true
		case "grpc-encoding":
			encoding = hf.Value
		case "grpc-status":
			code, err := strconv.ParseInt(hf.Value, 10, 32)
			if err != nil {
				return true, status.Error(codes.Unknown, fmt.Sprintf("transport: malformed grpc-status: %v", err))
			}
			grpcCode = codes.Code(uint32(code))
		case "grpc-message":
			grpcMessage = decodeMessage(hf.Value)
		case ":status":
			httpStatus = hf.Value
		}
	}
	if !isGRPC {
		st, informational, err := nonGRPCReply(httpStatus, contentTypeErr, end)
		switch {
		case err != nil:
			return true, err
		case informational:
			return false, nil
		case end:
			return true, st.Err()
		}
		x.nonGRPC = st
		return false, nil
	}
	if !end {
		x.headers, x.encoded = true, encoding
		return false, nil
	}
	x.status = status.New(grpcCode, grpcMessage)
	return true, nil
}

// nonGRPCReply is grpc-go's status for a reply that is not gRPC: from its
// HTTP status, with the content-type's complaint.
func nonGRPCReply(httpStatus, contentTypeErr string, end bool) (st *status.Status, informational bool, err error) {
	code := codes.Internal
	var errs []string
	if httpStatus == "" {
		errs = append(errs, "malformed header: missing HTTP status")
	} else {
		n, perr := strconv.Atoi(httpStatus)
		if perr != nil {
			return nil, false, status.Error(codes.Internal, fmt.Sprintf("transport: malformed http-status: %v", perr))
		}
		if n >= 100 && n < 200 {
			if end {
				return nil, false, status.Error(codes.Internal, fmt.Sprintf("protocol error: informational header with status code %d must not have END_STREAM set", n))
			}
			return nil, true, nil
		}
		errs = append(errs, fmt.Sprintf("unexpected HTTP status code received from server: %d (%s)", n, http.StatusText(n)))
		var ok bool
		if code, ok = httpStatusCodes[n]; !ok {
			code = codes.Unknown
		}
	}
	if contentTypeErr != "" {
		errs = append(errs, contentTypeErr)
	}
	return status.New(code, strings.Join(errs, "; ")), false, nil
}

// httpStatusCodes is grpc-go's mapping of HTTP statuses to codes.
var httpStatusCodes = map[int]codes.Code{
	http.StatusBadRequest:         codes.Internal,
	http.StatusUnauthorized:       codes.Unauthenticated,
	http.StatusForbidden:          codes.PermissionDenied,
	http.StatusNotFound:           codes.Unimplemented,
	http.StatusTooManyRequests:    codes.Unavailable,
	http.StatusBadGateway:         codes.Unavailable,
	http.StatusServiceUnavailable: codes.Unavailable,
	http.StatusGatewayTimeout:     codes.Unavailable,
}

// resetCodes is grpc-go's mapping of a stream reset's error code.
var resetCodes = map[http2.ErrCode]codes.Code{
	http2.ErrCodeNo:                 codes.Internal,
	http2.ErrCodeProtocol:           codes.Internal,
	http2.ErrCodeInternal:           codes.Internal,
	http2.ErrCodeFlowControl:        codes.ResourceExhausted,
	http2.ErrCodeSettingsTimeout:    codes.Internal,
	http2.ErrCodeStreamClosed:       codes.Internal,
	http2.ErrCodeFrameSize:          codes.Internal,
	http2.ErrCodeRefusedStream:      codes.Unavailable,
	http2.ErrCodeCancel:             codes.Canceled,
	http2.ErrCodeCompression:        codes.Internal,
	http2.ErrCodeConnect:            codes.Internal,
	http2.ErrCodeEnhanceYourCalm:    codes.ResourceExhausted,
	http2.ErrCodeInadequateSecurity: codes.PermissionDenied,
	http2.ErrCodeHTTP11Required:     codes.Internal,
}

func (x *exchange) onReset(f *http2.RSTStreamFrame) error {
	code, ok := resetCodes[f.ErrCode]
	if !ok {
		code = codes.Unknown
	}
	if code == codes.Canceled && x.expired() {
		code = codes.DeadlineExceeded
	}
	return status.Errorf(code, "stream terminated by RST_STREAM with error code: %v", f.ErrCode)
}

func (x *exchange) expired() bool {
	return !x.deadline.IsZero() && !x.deadline.After(time.Now())
}

// onData keeps the reply's bytes: the message (its length checked against
// MaxReplyBytes as soon as its prefix is in), or the start of a non-gRPC
// reply's body for its status.
func (x *exchange) onData(f *http2.DataFrame) (done bool, err error) {
	p := f.Data()
	if x.nonGRPC != nil {
		n := min(len(p), nonGRPCDataMax-len(x.data))
		x.data = append(x.data, p[:n]...)
		if len(x.data) >= nonGRPCDataMax || f.StreamEnded() {
			return true, x.nonGRPCStatus().Err()
		}
		return false, nil
	}
	if len(x.data)+len(p) > replyWindow {
		// More than its window: grpc-go's flow control ends the call.
		return true, status.Error(codes.Internal, fmt.Sprintf("received %d-bytes data exceeding the limit %d bytes", len(x.data)+len(p), replyWindow))
	}
	x.data = append(x.data, p...)
	if len(x.data) >= 5 {
		if n := binary.BigEndian.Uint32(x.data[1:5]); n > MaxReplyBytes {
			return true, status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", n, MaxReplyBytes)
		}
	}
	if f.StreamEnded() {
		// Ended without trailers: grpc-go's reader reports it so.
		return true, status.Error(codes.Internal, "server closed the stream without sending trailers")
	}
	return false, nil
}

func (x *exchange) nonGRPCStatus() *status.Status {
	return status.New(x.nonGRPC.Code(), fmt.Sprintf("%s\ndata: %q", x.nonGRPC.Message(), x.data))
}

// reply is the end of a call whose trailers came, as grpc-go's unary call
// reads it: the message first (its flaws before the status), then that no
// second one follows, then the trailers' status.
func (x *exchange) reply() (healthpb.HealthCheckResponse_ServingStatus, error) {
	if len(x.data) == 0 {
		if err := x.status.Err(); err != nil {
			return 0, err
		}
		return 0, status.Error(codes.Internal, "cardinality violation: received no response message from non-server-streaming RPC")
	}
	msg, rest, err := nextMessage(x.data)
	if err != nil {
		return 0, err
	}
	switch flag := x.data[0]; {
	case flag == 1 && (x.encoded == "" || x.encoded == "identity"):
		return 0, status.Error(codes.Internal, "grpc: compressed flag set with identity or empty encoding")
	case flag == 1:
		return 0, status.Errorf(codes.Internal, "grpc: Decompressor is not installed for grpc-encoding %q", x.encoded)
	case flag > 1:
		return 0, status.Errorf(codes.Internal, "grpc: received unexpected payload format %d", flag)
	}
	var resp healthpb.HealthCheckResponse
	if err := proto.Unmarshal(msg, &resp); err != nil {
		return 0, status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
	}
	if len(rest) > 0 {
		if _, _, err := nextMessage(rest); err != nil {
			return 0, err
		}
		return 0, status.Error(codes.Internal, "cardinality violation: expected <EOF> for non server-streaming RPCs, but received another message")
	}
	if err := x.status.Err(); err != nil {
		return 0, err
	}
	return resp.GetStatus(), nil
}

// nextMessage splits a length-prefixed message off b, as grpc-go's parser
// reads one: a prefix or message cut short is an unexpected EOF.
func nextMessage(b []byte) (msg, rest []byte, err error) {
	if len(b) < 5 {
		return nil, nil, status.Error(codes.Internal, io.ErrUnexpectedEOF.Error())
	}
	n := binary.BigEndian.Uint32(b[1:5])
	if n > MaxReplyBytes {
		return nil, nil, status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", n, MaxReplyBytes)
	}
	if uint32(len(b)-5) < n {
		return nil, nil, status.Error(codes.Internal, io.ErrUnexpectedEOF.Error())
	}
	return b[5 : 5+n], b[5+n:], nil
}

// validContentType is grpc-go's: application/grpc, alone or with a
// subtype after '+' or ';'.
func validContentType(ct string) bool {
	const base = "application/grpc"
	if !strings.HasPrefix(ct, base) {
		return false
	}
	if len(ct) == len(base) {
		return true
	}
	return ct[len(base)] == '+' || ct[len(base)] == ';'
}

// decodeMessage is grpc-go's grpc-message decoding: %XX escapes decoded,
// anything else kept as it is.
func decodeMessage(msg string) string {
	if !strings.Contains(msg, "%") {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); i++ {
		if msg[i] == '%' && i+2 < len(msg) {
			if v, err := strconv.ParseUint(msg[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(msg[i])
	}
	return b.String()
}

var (
	errExchangeTooLarge = fmt.Errorf("the server sent over %d bytes", maxExchange)
	errTooManyToAnswer  = fmt.Errorf("the server sent over %d pings and settings", maxAnswered)
)
