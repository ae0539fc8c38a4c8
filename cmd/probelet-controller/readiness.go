package main

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// drainDelay is how long a replica stays up, not ready, after SIGTERM
// while it serves the webhook: long enough for the Service's endpoints to
// drop it and the API server to send its next reviews to another replica,
// so a rollout or `helm upgrade` lets no pod through unconverted.
const drainDelay = 5 * time.Second

// readiness is /readyz: a replica serving the webhook is ready once its
// certificate is loaded, and no replica is once it drains.
type readiness struct {
	certificate func() bool // nil: no webhook
	draining    atomic.Bool
}

func (r *readiness) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	switch {
	case r.draining.Load():
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "draining: stopping")
	case r.certificate != nil && !r.certificate():
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "no webhook certificate loaded yet")
	default:
		fmt.Fprintln(w, "ok")
	}
}

// drainAfter returns a context that ends drainDelay after signalled does
// (at once without a webhook), the replica not ready meanwhile.
func (r *readiness) drainAfter(signalled context.Context, webhook bool, log *zap.Logger) context.Context {
	ctx, cancel := context.WithCancel(context.WithoutCancel(signalled))
	context.AfterFunc(signalled, func() {
		r.draining.Store(true)
		if webhook {
			log.Info("Draining: not ready, serving the webhook a little longer", zap.Duration("for", drainDelay))
			time.Sleep(drainDelay)
		}
		cancel()
	})
	return ctx
}
