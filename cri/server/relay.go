package server

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Why a relay stopped, as the stream's final status.
var (
	errSlowClient = status.Error(codes.ResourceExhausted,
		"client is not reading the stream fast enough; disconnected so probing is never slowed down")
	errSourceClosed = status.Error(codes.Unavailable, "the event source closed the subscription")
	errShuttingDown = status.Error(codes.Unavailable, "probelet is shutting down")
)

// relay streams a subscription to a client. A goroutine drains the
// subscription into a bounded queue at once, so the publisher never sees
// this subscriber lag; the calling goroutine does the (possibly blocking)
// sends. When the queue overflows the subscription is cancelled at once
// and, after the queued messages, the stream ends with ResourceExhausted.
// first is sent before anything from sub (a backlog); convert returns false
// to skip an item (filters).
func relay[T, M any](
	ctx context.Context, done <-chan struct{}, queue int, first []M,
	sub <-chan T, cancel func(),
	convert func(T) (M, bool), send func(M) error,
) error {
	q := make(chan M, queue)
	var reason error // written before q is closed, read after
	go func() {
		defer close(q)
		defer cancel()
		reason = drain(ctx, done, sub, q, convert)
	}()
	for _, m := range first {
		if err := send(m); err != nil {
			return err
		}
	}
	for m := range q {
		if err := send(m); err != nil {
			return err
		}
	}
	return reason
}

// drain moves items from sub to q until something ends the relay, and
// says what did.
func drain[T, M any](ctx context.Context, done <-chan struct{}, sub <-chan T, q chan<- M, convert func(T) (M, bool)) error {
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-done:
			return errShuttingDown
		case it, ok := <-sub:
			if !ok {
				return errSourceClosed
			}
			m, keep := convert(it)
			if !keep {
				continue
			}
			select {
			case q <- m:
			default:
				return errSlowClient
			}
		}
	}
}

// streamEnded logs why a stream ended when it matters to an operator and
// returns err unchanged.
func (s *Server) streamEnded(method string, err error) error {
	if errors.Is(err, errSlowClient) {
		s.log.Warn("disconnected a client that stopped reading its stream", zap.String("method", method))
	}
	return err
}
