package grpcwire

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// nonGRPCDataMax is how much of a non-gRPC reply's body grpc-go keeps for
// its status.
const nonGRPCDataMax = 1024

// Stream is one call's reply as it comes, read as grpc-go's transport and
// unary call read it.
type Stream struct {
	id       uint32
	maxReply uint32
	window   uint32    // the reply's flow-control window
	deadline time.Time // the call's, for a reset that cancels it
	headers  bool      // a gRPC reply's headers came
	encoded  string    // the reply's grpc-encoding
	data     []byte    // the reply's message bytes, prefix included
	// into takes the reply's message as soon as all of it came, as
	// grpc-go's reader decodes it before the stream ends; read is where
	// the data past it starts (0 until then).
	into    proto.Message
	read    int
	nonGRPC *status.Status
	status  *status.Status // from the trailers
}

// onHeaders is grpc-go's operateHeaders for the call's stream: the reply's
// headers, or its trailers (or both at once), or a reply that is not gRPC.
func (s *Stream) onHeaders(f *http2.MetaHeadersFrame) (done bool, err error) {
	end := f.StreamEnded()
	if s.headers && !end {
		return true, errHeadersMidStream()
	}
	if f.Truncated {
		return true, errHeaderListSize()
	}
	if s.nonGRPC != nil {
		if end {
			return true, s.nonGRPCStatus().Err()
		}
		return false, nil
	}
	var (
		isGRPC         = s.headers
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
				return true, errMalformedGRPCStatus(err)
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
		s.nonGRPC = st
		return false, nil
	}
	if !end {
		s.headers, s.encoded = true, encoding
		return false, nil
	}
	s.status = status.New(grpcCode, grpcMessage)
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
			return nil, false, errMalformedHTTPStatus(perr)
		}
		if n >= 100 && n < 200 {
			if end {
				return nil, false, errInformationalEnd(n)
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

func (s *Stream) onReset(f *http2.RSTStreamFrame) error {
	code, ok := resetCodes[f.ErrCode]
	if !ok {
		code = codes.Unknown
	}
	if code == codes.Canceled && s.expired() {
		code = codes.DeadlineExceeded
	}
	return errReset(code, f.ErrCode)
}

func (s *Stream) expired() bool {
	return !s.deadline.IsZero() && !s.deadline.After(time.Now())
}

// onData keeps the reply's bytes: the message (its length checked against
// the reply limit as soon as its prefix is in), or the start of a non-gRPC
// reply's body for its status.
func (s *Stream) onData(f *http2.DataFrame) (done bool, err error) {
	p := f.Data()
	if s.nonGRPC != nil {
		n := min(len(p), nonGRPCDataMax-len(s.data))
		s.data = append(s.data, p[:n]...)
		if len(s.data) >= nonGRPCDataMax || f.StreamEnded() {
			return true, s.nonGRPCStatus().Err()
		}
		return false, nil
	}
	if len(s.data)+len(p) > int(s.window) {
		// More than its window: grpc-go's flow control ends the call.
		return true, errOverWindow(len(s.data)+len(p), s.window)
	}
	s.data = append(s.data, p...)
	if err := s.readMessages(); err != nil {
		return true, err
	}
	if f.StreamEnded() {
		// Ended without trailers: that is the status, but grpc-go reads
		// what came first (a message cut short is its own error).
		s.status = status.New(codes.Internal, "server closed the stream without sending trailers")
		return true, nil
	}
	return false, nil
}

func (s *Stream) nonGRPCStatus() *status.Status {
	return status.New(s.nonGRPC.Code(), fmt.Sprintf("%s\ndata: %q", s.nonGRPC.Message(), s.data))
}

// readMessages reads what came of the reply as grpc-go's reader does, as
// it comes: a message's prefix is checked for the size as soon as it is
// in, the first message is decoded as soon as all of it is (its flaws are
// the call's error whatever follows), and a second one, once all of it
// is in, is the unary call's cardinality error.
func (s *Stream) readMessages() error {
	for {
		rest := s.data[s.read:]
		if len(rest) < 5 {
			return nil
		}
		n := binary.BigEndian.Uint32(rest[1:5])
		if n > s.maxReply {
			return errTooLarge(n, s.maxReply)
		}
		if uint32(len(rest)-5) < n {
			return nil
		}
		if s.read > 0 {
			return errSecondMessage()
		}
		if err := s.decode(rest[0], rest[5:5+n]); err != nil {
			return err
		}
		s.read = 5 + int(n)
	}
}

// decode is the reply's message, its flag byte first, into s.into.
func (s *Stream) decode(flag byte, msg []byte) error {
	switch {
	case flag == 1 && (s.encoded == "" || s.encoded == "identity"):
		return errCompressedIdentity()
	case flag == 1:
		return errNoDecompressor(s.encoded)
	case flag > 1:
		return errPayloadFormat(flag)
	}
	if err := proto.Unmarshal(msg, s.into); err != nil {
		return errUnmarshal(err)
	}
	return nil
}

// reply is the end of a call whose stream ended (its trailers, or data
// that ended it), as grpc-go's unary call reads it: its message, which
// readMessages decoded as it came; a message or prefix cut short; no
// message at all; then the status.
func (s *Stream) reply() error {
	if rest := s.data[s.read:]; len(rest) > 0 {
		// Cut short: a whole one would have been read as it came.
		_, _, err := s.nextMessage(rest)
		return err
	}
	if s.read == 0 {
		if err := s.status.Err(); err != nil {
			return err
		}
		return errNoMessage()
	}
	return s.status.Err()
}

// nextMessage splits a length-prefixed message off b, as grpc-go's parser
// reads one: a prefix or message cut short is an unexpected EOF.
func (s *Stream) nextMessage(b []byte) (msg, rest []byte, err error) {
	if len(b) < 5 {
		return nil, nil, errTruncated()
	}
	n := binary.BigEndian.Uint32(b[1:5])
	if n > s.maxReply {
		return nil, nil, errTooLarge(n, s.maxReply)
	}
	if uint32(len(b)-5) < n {
		return nil, nil, errTruncated()
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
