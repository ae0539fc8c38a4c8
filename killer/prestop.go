package killer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe/httpprobe"
)

// hookAfterStop is how long a preStop hook still running when its
// container stopped is waited for: the stop ended the hook's process (an
// exec) or its server (an httpGet to the pod), so it ends now, failing as
// the kubelet's would; then it is cancelled.
const hookAfterStop = MinGracePeriod

// errNoExecRunner fails exec hooks of a killer given no exec runner.
var errNoExecRunner = errors.New("no exec runner to run the hook's command with")

// runningHook is a preStop hook on its own goroutine.
type runningHook struct {
	start  time.Time
	done   chan prober.HookResult
	cancel context.CancelFunc
}

// startHook runs h on its own goroutine, as the kubelet's
// executePreStopHook does, under a context of ctx that the killer cancels
// once it stops waiting for the hook.
func (k *Killer) startHook(ctx context.Context, kill prober.Kill, h *prober.Hook) *runningHook {
	ctx, cancel := context.WithCancel(ctx)
	r := &runningHook{start: k.clock.Now(), done: make(chan prober.HookResult, 1), cancel: cancel}
	// A sleep starts with the hook, not when its goroutine gets to run.
	var slept <-chan time.Time
	if h.Kind == prober.HookSleep && h.Err == nil {
		slept = k.clock.After(h.Sleep)
	}
	go func() {
		var res prober.HookResult
		res.FellBackToHTTP, res.Err = k.runHook(ctx, kill, h, slept)
		res.Took = k.clock.Since(r.start)
		r.done <- res
	}()
	return r
}

// runHook is the kubelet's handler runner: the command in the container
// (an exit code other than 0 fails it), the GET (any answer succeeds), the
// sleep (never fails: cut short, it is only waited for no longer).
func (k *Killer) runHook(ctx context.Context, kill prober.Kill, h *prober.Hook, slept <-chan time.Time) (fellBackTo string, err error) {
	if h.Err != nil {
		return "", h.Err
	}
	switch h.Kind {
	case prober.HookExec:
		if k.exec == nil {
			return "", errNoExecRunner
		}
		// The grace bounds the command in the runtime too: the kubelet
		// sets no timeout, and its stop then ends the command the same.
		stdout, stderr, code, err := k.exec.ExecSync(ctx, kill.ContainerID, h.Command, h.Grace)
		switch {
		case err != nil:
			return "", fmt.Errorf("exec lifecycle hook (%s): %w", strings.Join(h.Command, " "), err)
		case code != 0:
			return "", fmt.Errorf("exec lifecycle hook (%s) exited with %d, output %q", strings.Join(h.Command, " "), code,
				truncate(string(stdout)+string(stderr)))
		}
		return "", nil
	case prober.HookHTTP:
		hctx, err := h.Context(ctx)
		if err != nil {
			return "", fmt.Errorf("http lifecycle hook: %w", err)
		}
		return httpprobe.RunLifecycleGet(hctx, k.http, h.HTTP)
	case prober.HookSleep:
		select {
		case <-slept:
		case <-ctx.Done():
		}
		return "", nil
	}
	return "", fmt.Errorf("invalid handler: kind %d", h.Kind)
}

// waitHook waits for the hook as the kubelet's executePreStopHook does, at
// most its grace, and returns the grace left for the stop: the whole
// seconds waited come off (the kubelet counts in truncated seconds), never
// below the 2 s minimum. A hook that ended is reported; one that did not
// is returned, for finishHook after the stop.
func (k *Killer) waitHook(ctx context.Context, r *runningHook, h *prober.Hook, report chan<- prober.KillOutcome) (time.Duration, *runningHook) {
	outlived := r
	select {
	case res := <-r.done:
		r.cancel()
		report <- prober.KillOutcome{Kind: prober.KillHookRan, Hook: &res}
		outlived = nil
	case <-k.clock.After(h.Grace):
	case <-ctx.Done():
	}
	waited := k.clock.Since(r.start).Truncate(time.Second)
	return max(h.Grace-waited, MinGracePeriod), outlived
}

// finishHook is the end of a hook that outlived its wait, after the stop:
// it is given hookAfterStop to end by itself, then cancelled, and reported.
func (k *Killer) finishHook(r *runningHook, report chan<- prober.KillOutcome) {
	defer r.cancel()
	var res prober.HookResult
	select {
	case res = <-r.done:
	case <-k.clock.After(hookAfterStop):
		r.cancel()
		res = <-r.done
	}
	report <- prober.KillOutcome{Kind: prober.KillHookRan, Hook: &res}
}

// truncate bounds a hook's output in its error (the log's line).
func truncate(s string) string {
	const max = 1 << 10
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
