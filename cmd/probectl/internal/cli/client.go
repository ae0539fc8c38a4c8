package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/internal/endpoint"
)

// DefaultSocket is where probelet listens unless told otherwise.
const DefaultSocket = "unix:///run/probelet/probelet.sock"

// SocketEnv is the environment variable that overrides the default socket.
const SocketEnv = "PROBELET_SOCKET"

// maxMessage lets a node with thousands of containers list them in one
// answer (gRPC's default limit is 4 MiB).
const maxMessage = 64 << 20

// client is a connection to probelet's API with errors translated for
// people.
type client struct {
	api     apiv1.ProbeletClient
	conn    *grpc.ClientConn // nil for the probe-state API
	path    string           // where it answers, for messages
	timeout time.Duration
	cluster bool // the probe-state API (kubectl probelet), not a socket
}

// socketPath returns the socket path of --socket, by the rule every
// endpoint of probelet's follows (internal/endpoint).
func socketPath(socket string) (string, error) {
	path, err := endpoint.UnixPath(socket)
	if err != nil {
		return "", usageErrorf("--socket %v", err)
	}
	return path, nil
}

// dial checks the socket file for the common mistakes first (no daemon,
// no permission), so those get a precise message, then connects.
func dial(socket string, timeout time.Duration) (*client, error) {
	path, err := socketPath(socket)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, withCode(ExitError, statError(path, err))
	}
	if fi.Mode().Type() != os.ModeSocket {
		return nil, withCode(ExitError, fmt.Errorf("%s is not a socket (set --socket or %s to probelet's socket)", path, SocketEnv))
	}
	conn, err := grpc.NewClient("unix://"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage)))
	if err != nil {
		return nil, withCode(ExitError, fmt.Errorf("connect to %s: %w", path, err))
	}
	return &client{api: apiv1.NewProbeletClient(conn), conn: conn, path: path, timeout: timeout}, nil
}

func statError(path string, err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("is probelet running? no socket at %s (set --socket or %s)", path, SocketEnv)
	case errors.Is(err, os.ErrPermission):
		return permissionError(path)
	}
	return fmt.Errorf("cannot use socket %s: %w", path, err)
}

func permissionError(path string) error {
	return fmt.Errorf("permission denied on %s: run probectl as root (or as a member of the socket's group)", path)
}

func (c *client) Close() {
	if c.conn != nil {
		_ = c.conn.Close()
	}
}

// unary bounds a call with the client's timeout.
func (c *client) unary(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// check makes sure a probelet answers before a long-lived stream is
// opened, so a dead or foreign socket fails fast instead of hanging.
func (c *client) check(ctx context.Context) error {
	ctx, cancel := c.unary(ctx)
	defer cancel()
	_, err := c.api.Version(ctx, &apiv1.VersionRequest{})
	return c.explain(err)
}

// explain turns a gRPC error into a message that says what to do, with
// the matching exit code.
func (c *client) explain(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return withCode(ExitError, err)
	}
	switch st.Code() {
	case codes.NotFound:
		return withCode(ExitNotFound, errors.New(st.Message()))
	case codes.InvalidArgument:
		return withCode(ExitUsage, errors.New(st.Message()))
	case codes.DeadlineExceeded:
		if c.cluster {
			return withCode(ExitError, fmt.Errorf("%s did not answer within %s", c.path, c.timeout))
		}
		return withCode(ExitError, fmt.Errorf("probelet at %s did not answer within %s (is it a probelet socket?)", c.path, c.timeout))
	case codes.PermissionDenied, codes.Unauthenticated:
		return withCode(ExitError, errors.New(st.Message()))
	case codes.Unimplemented:
		return withCode(ExitError, fmt.Errorf("%s does not serve probelet's API (%s): is it another CRI runtime, or an older probelet?", c.path, st.Message()))
	case codes.Unavailable:
		if c.cluster {
			return withCode(ExitError, errors.New(st.Message()))
		}
		return withCode(ExitError, c.unavailable(st.Message()))
	case codes.Canceled:
		return withCode(ExitError, errors.New("interrupted"))
	}
	return withCode(ExitError, fmt.Errorf("probelet: %s", st.Message()))
}

func (c *client) unavailable(msg string) error {
	switch {
	case strings.Contains(msg, "permission denied"):
		return permissionError(c.path)
	case strings.Contains(msg, "no such file"):
		return fmt.Errorf("is probelet running? no socket at %s", c.path)
	case strings.Contains(msg, "connection refused"):
		return fmt.Errorf("is probelet running? nothing listens on %s (a stale socket)", c.path)
	case strings.Contains(msg, "preface"), strings.Contains(msg, "http2"), strings.Contains(msg, "frame"),
		strings.Contains(msg, "broken pipe"), strings.Contains(msg, "connection reset"), strings.Contains(msg, "EOF"):
		// The peer accepted the connection but hung up or spoke something else.
		return fmt.Errorf("%s did not answer as probelet's gRPC API (is it a probelet socket?): %s", c.path, msg)
	}
	return fmt.Errorf("probelet at %s is unavailable: %s", c.path, msg)
}

// rpc is a unary method of probelet's API, as a method expression such
// as apiv1.ProbeletClient.Why.
type rpc[Req, Resp any] func(apiv1.ProbeletClient, context.Context, Req, ...grpc.CallOption) (Resp, error)

// call connects, makes one unary call bounded by --timeout and explains
// its error: the whole exchange of a one-shot command.
func call[Req, Resp any](ctx context.Context, o *rootOptions, method rpc[Req, Resp], req Req) (Resp, error) {
	var zero Resp
	c, err := o.connect()
	if err != nil {
		return zero, err
	}
	defer c.Close()
	ctx, cancel := c.unary(ctx)
	defer cancel()
	resp, err := method(c.api, ctx, req)
	if err != nil {
		return zero, c.explain(err)
	}
	return resp, nil
}
