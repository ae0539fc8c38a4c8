package grpcwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/net/http2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Every error a call or a connection ends with is made in this file.
// Those grpc-go would give for the same bytes are its words and codes
// exactly (its transport's and its client's, as of the version go.mod
// names): a probe's output and a kill's reason must read the same whichever
// client ran it, and the differential fuzzer FuzzDirectAnswersAsGRPCGo
// (prober/probe/grpcprobe) holds them equal. The rest are grpcwire's own.

// grpcwire's own.
var (
	// ErrNotReady is a connection whose server's first frame was not its
	// SETTINGS: grpc-go calls a connection ready only once they came.
	ErrNotReady = errors.New("the server's first frame was not its SETTINGS")
	// ErrSpent is a connection that can carry no more calls (closed, going
	// away, broken by an earlier call), found before a call was sent: the
	// call can go out on another connection.
	ErrSpent = errors.New("grpcwire: the connection carries no more calls")
	// ErrNoRoom is a request larger than the server lets the client send
	// at once (its flow-control window or frame size); nothing was sent.
	ErrNoRoom = errors.New("grpcwire: the request is larger than the server's window")

	errTooManyToAnswer = fmt.Errorf("the server sent over %d pings and settings", MaxAnswered)
	errFrames          = fmt.Errorf("the server sent over %d frames carrying under %d bytes each", freeFrames, frameCost)
)

// errOverBudget is a call whose server sent more bytes than it may.
func errOverBudget(budget int64) error { return fmt.Errorf("the server sent over %d bytes", budget) }

// The connection's, as grpc-go's transport words them.

// connectionError is grpc-go's status for a connection that failed before
// it was ready.
func connectionError(desc string) error {
	return status.Errorf(codes.Unavailable, "connection error: desc = %q", "transport: "+desc)
}

func errDeadline() error {
	return status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
}

// errRead is a connection that failed under the call; goAwayDebug is the
// debug data of a GOAWAY that came first ("" for none).
func errRead(err error, goAwayDebug string) error {
	desc := "error reading from server: " + err.Error()
	if goAwayDebug != "" {
		return status.Errorf(codes.Unavailable, "closing transport due to: connection error: desc = %q, received prior goaway: %s", desc, goAwayDebug)
	}
	return status.Error(codes.Unavailable, desc)
}

func errDraining() error {
	return status.Error(codes.Unavailable, "the stream is rejected because server is draining the connection")
}

func errMarshal(err error) error {
	return status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err)
}

// The stream's.

func errHeadersMidStream() error {
	return status.Error(codes.Internal, "a HEADERS frame cannot appear in the middle of a stream")
}

func errHeaderListSize() error {
	return status.Error(codes.Internal, "peer header list size exceeded limit")
}

func errMalformedGRPCStatus(err error) error {
	return status.Error(codes.Unknown, fmt.Sprintf("transport: malformed grpc-status: %v", err))
}

func errMalformedHTTPStatus(err error) error {
	return status.Error(codes.Internal, fmt.Sprintf("transport: malformed http-status: %v", err))
}

func errInformationalEnd(httpStatus int) error {
	return status.Error(codes.Internal, fmt.Sprintf("protocol error: informational header with status code %d must not have END_STREAM set", httpStatus))
}

// errFrame is grpc-go's status for a frame the Framer refused as a stream
// error: the reset code's gRPC code, and the framer's detail.
func errFrame(se http2.StreamError, detail error) error {
	code, ok := resetCodes[se.Code]
	if !ok {
		code = codes.Unknown
	}
	msg := "received invalid frame"
	if detail != nil {
		msg = detail.Error()
	}
	return status.Error(code, msg)
}

// errReset is a stream the server reset; code is the gRPC code of its
// HTTP/2 error code (resetCodes).
func errReset(code codes.Code, h2 http2.ErrCode) error {
	return status.Errorf(code, "stream terminated by RST_STREAM with error code: %v", h2)
}

func errOverWindow(n int, window uint32) error {
	return status.Error(codes.Internal, fmt.Sprintf("received %d-bytes data exceeding the limit %d bytes", n, window))
}

// The message's, as grpc-go's client words them.

// msgTooLarge begins the status of a reply over the receive limit.
const msgTooLarge = "grpc: received message larger than max"

func errTooLarge(n, limit uint32) error {
	return status.Errorf(codes.ResourceExhausted, msgTooLarge+" (%d vs. %d)", n, limit)
}

// TooLarge reports whether err is a reply refused for being over the
// receive limit — by grpcwire or by grpc-go, whose words these are.
func TooLarge(err error) bool {
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return false
	}
	st := se.GRPCStatus()
	return st.Code() == codes.ResourceExhausted && strings.HasPrefix(st.Message(), msgTooLarge)
}

func errSecondMessage() error {
	return status.Error(codes.Internal, "cardinality violation: expected <EOF> for non server-streaming RPCs, but received another message")
}

func errNoMessage() error {
	return status.Error(codes.Internal, "cardinality violation: received no response message from non-server-streaming RPC")
}

func errCompressedIdentity() error {
	return status.Error(codes.Internal, "grpc: compressed flag set with identity or empty encoding")
}

func errNoDecompressor(encoding string) error {
	return status.Errorf(codes.Internal, "grpc: Decompressor is not installed for grpc-encoding %q", encoding)
}

func errPayloadFormat(flag byte) error {
	return status.Errorf(codes.Internal, "grpc: received unexpected payload format %d", flag)
}

func errUnmarshal(err error) error {
	return status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
}

func errTruncated() error {
	return status.Error(codes.Internal, io.ErrUnexpectedEOF.Error())
}
