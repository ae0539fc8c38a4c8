package proxy

import (
	"context"
	"net"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// drainTimeout bounds how long Serve waits for calls in flight when it
// stops; the kubelet's own calls are short, and its connection comes back
// to whoever accepts on the socket next.
const drainTimeout = 5 * time.Second

// handle receives every call: no service is registered, so the server
// hands each method, known or not, to this one handler. Only CRI methods
// go further; every other method answers Unimplemented without its
// request being read.
func (p *Proxy) handle(_ any, ss grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(ss)
	if !ok || !isCRI(method) {
		// Never forwarded: containerd's own API on the same socket
		// would hand the kubelet's callers (or anyone who can reach
		// this socket) everything the CRI does not expose.
		p.m.calls.WithLabelValues(methodOther, servedRefused).Inc()
		return status.Errorf(codes.Unimplemented, "probelet CRI proxy: unknown service: only %s and %s are served",
			strings.Trim(runtimeService, "/"), strings.Trim(imageService, "/"))
	}
	switch {
	case cachedReads[method]:
		return p.serveCached(ss, method)
	case method == mGetContainerEvents && !p.forwardEv:
		p.m.calls.WithLabelValues(methodLabel(method), servedProbelet).Inc()
		return p.events.serve(ss)
	case method == mExecSync && p.exec != nil:
		return p.serveExecSync(ss, method)
	}
	p.m.calls.WithLabelValues(methodLabel(method), servedRuntime).Inc()
	if !invalidates(method) {
		return p.forward(ss, method)
	}
	// A change: whatever the memo holds may be about to go stale, and is
	// again once the runtime has done it.
	p.memo.flush()
	err := p.forward(ss, method)
	p.memo.flush()
	p.m.invalidations.WithLabelValues(sourceCall).Add(2)
	return err
}

// Serve answers CRI calls on l until ctx ends, then stops accepting,
// ends the event streams, hands every accepted connection over to the
// server (see handoverListener), lets calls in flight finish (up to
// drainTimeout) and returns. It closes l but never removes the socket
// file: a socket systemd passed stays open in systemd for the next
// probelet (connections wait in its backlog meanwhile); Listen's release
// removes a socket probelet made itself.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	srv := grpc.NewServer(
		grpc.UnknownServiceHandler(p.handle),
		grpc.ForceServerCodecV2(rawCodec{}),
		grpc.MaxRecvMsgSize(maxRequestSize),
		grpc.MaxSendMsgSize(MaxReplySize),
	)
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, run := range []func(context.Context){p.watchRuntime, p.events.run} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(bg)
		}()
	}
	defer func() {
		stopBG()
		wg.Wait()
	}()

	hl := newHandoverListener(l)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(hl) }()
	p.log.Info("Serving the CRI proxy", zap.String("address", l.Addr().String()), zap.String("runtime", p.endpoint))
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	p.events.close()
	// Stop accepting before stopping the server: Serve returns once
	// Accept fails, and no connection is accepted after that.
	_ = hl.Close()
	<-errc
	if !hl.settle(handoverTimeout) {
		p.log.Warn("Stopping with accepted connections not yet served; their clients see a reset",
			zap.Duration("waited", handoverTimeout))
	}
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(drainTimeout):
		srv.Stop()
		<-stopped
	}
	return nil
}
