package server

import (
	"context"
	"fmt"
	"path"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// criServicePrefix selects the CRI services whose unimplemented methods
// get the read-only answer.
const criServicePrefix = "/runtime.v1."

// readOnlyUnary turns the generic "method X not implemented" of the
// embedded Unimplemented servers into an answer a person understands.
func readOnlyUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	return resp, readOnlyError(info.FullMethod, err)
}

// readOnlyStream is readOnlyUnary for streaming methods.
func readOnlyStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return readOnlyError(info.FullMethod, handler(srv, ss))
}

func readOnlyError(fullMethod string, err error) error {
	if status.Code(err) != codes.Unimplemented || !strings.HasPrefix(fullMethod, criServicePrefix) {
		return err
	}
	return ReadOnlyError(path.Base(fullMethod))
}

// ReadOnlyError is the Unimplemented answer to a CRI call probelet does not
// serve, e.g. "probelet is read-only: StopContainer is not supported".
func ReadOnlyError(method string) error {
	return status.Error(codes.Unimplemented, fmt.Sprintf("probelet is read-only: %s is not supported", method))
}
