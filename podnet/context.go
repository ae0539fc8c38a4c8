package podnet

import (
	"context"
	"errors"
)

type originKey struct{}

// WithNamespace returns ctx carrying ns as the origin of the connections a
// probe dials within it: HTTP and gRPC probes hand their dialer nothing
// else. A nil ns is the node's own namespace.
func WithNamespace(ctx context.Context, ns *Namespace) context.Context {
	if ns == nil {
		return ctx
	}
	return context.WithValue(ctx, originKey{}, ns)
}

// FromContext is the namespace WithNamespace put in ctx, nil for none.
func FromContext(ctx context.Context) *Namespace {
	ns, _ := ctx.Value(originKey{}).(*Namespace)
	return ns
}

// SocketError is a probe socket that could not be made in a pod's network
// namespace (released with its pod, or refused by the kernel): a prober
// error, whose run is thrown away as the kubelet throws away a probe that
// errors, never the app's Failure.
type SocketError struct {
	// Namespace names the namespace, as /proc does.
	Namespace string
	Err       error
}

func (e *SocketError) Error() string {
	return "no probe socket in the pod's network namespace " + e.Namespace + ": " + e.Err.Error()
}

func (e *SocketError) Unwrap() error { return e.Err }

// IsSocketError reports whether err is, or wraps, a SocketError.
func IsSocketError(err error) bool {
	var se *SocketError
	return errors.As(err, &se)
}
