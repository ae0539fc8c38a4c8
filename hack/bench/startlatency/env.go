package main

import (
	"context"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/internal/checkout"
)

// env is everything a run needs: the bed, probelet, the NRI observer, the
// relist loop and a CRI connection to containerd.
type env struct {
	bed      *bed
	binDir   string
	daemon   *daemon
	observer *observer
	relister *relister
	conn     *grpc.ClientConn
	rt       runtimeapi.RuntimeServiceClient
}

func startEnv(ctx context.Context, c config) (_ *env, err error) {
	root, err := checkout.Root()
	if err != nil {
		return nil, err
	}
	e := &env{}
	defer func() {
		if err != nil {
			_ = e.close(false)
		}
	}()
	bin := c.probelet
	if bin == "" {
		if e.binDir, err = os.MkdirTemp("", "startlatency"); err != nil {
			return nil, err
		}
		if bin, err = buildProbelet(ctx, root, e.binDir); err != nil {
			return nil, err
		}
	}
	if e.bed, err = startBed(ctx, root); err != nil {
		return nil, err
	}
	if e.conn, err = grpc.NewClient(e.bed.cri, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		return nil, err
	}
	e.rt = runtimeapi.NewRuntimeServiceClient(e.conn)
	if e.daemon, err = startDaemon(ctx, bin, e.bed); err != nil {
		return nil, err
	}
	if e.observer, err = startObserver(ctx, e.bed.nri); err != nil {
		return nil, err
	}
	e.relister = startRelister(e.rt)
	return e, nil
}

// close stops everything in reverse order; keep leaves the bed and
// probelet running for inspection.
func (e *env) close(keep bool) error {
	if e.relister != nil {
		e.relister.stop()
	}
	if e.observer != nil {
		e.observer.stop()
	}
	if e.conn != nil {
		e.conn.Close()
	}
	if e.binDir != "" && !keep {
		os.RemoveAll(e.binDir)
	}
	if keep && e.bed != nil {
		fmt.Fprintf(os.Stderr, "kept the bed in %s (probelet log %s); remove it with hack/testbed/down.sh %s after stopping probelet (pid %d)\n",
			e.bed.dir, e.daemon.log, e.bed.dir, e.daemon.cmd.Process.Pid)
		return nil
	}
	if e.daemon != nil {
		e.daemon.stop()
	}
	if e.bed != nil {
		return e.bed.stop()
	}
	return nil
}
