package directexec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/probelet/probelet/prober/probe/execprobe"
)

const (
	// maxOutput is how much of each stream is kept by default: the probe
	// reports 10 KiB of stdout then stderr, the rest is read and dropped.
	maxOutput = 10 << 10
	// drainGrace is how long after the timeout the output of a command
	// that exited is still read when something it left behind holds it
	// open. containerd reads it to its end, and the kubelet waits that
	// long (the timeout plus its 2 minute runtime request timeout) before
	// it counts the probe as timed out.
	drainGrace = 2 * time.Minute
)

type result struct {
	stdout, stderr []byte
	code           int32
	held           int64 // of the runner's output budget, until released
}

// run hands one probe to the helper: the request goes over a socket whose
// closing (by probelet, or its death) cancels the command; the command
// writes straight into two pipes probelet reads.
func (r *Runner) run(ctx context.Context, p *profile, cmd []string, timeout time.Duration) (result, error) {
	start := time.Now()
	ms := max(uint64(timeout.Milliseconds()), 1)
	ctl, theirs, err := socketpair()
	if err != nil {
		return result{}, err
	}
	defer ctl.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		theirs.Close()
		return result{}, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		theirs.Close()
		outR.Close()
		outW.Close()
		return result{}, err
	}
	err = r.srv.send(theirs, outW, errW)
	theirs.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return result{}, unsupportedf(reasonSetup, "%v", err)
	}

	// The output is read until both pipes close: a process the command
	// left behind may hold them open, as long as the runtime would wait.
	deadline := start.Add(timeout)
	// Waits for the output budget end at the call's deadline, or sooner
	// when the call ends.
	waitCtx, endWaits := context.WithDeadline(ctx, deadline)
	defer endWaits()
	var out *callOutput
	if r.replyLimit > 0 || r.budget != nil {
		out = newCallOutput(waitCtx, r.replyLimit, r.budget, r.budgetSize, r.maxOutput)
	}
	stdout, stderr := capped{limit: r.maxOutput, call: out}, capped{limit: r.maxOutput, call: out}
	if out != nil {
		out.streams = []*capped{&stdout, &stderr}
	}
	// What the call holds of the budget goes back on every way out but
	// the answer, whose Output holds it until released.
	answered := false
	defer func() {
		if !answered {
			out.giveBack()
		}
	}()
	var wg sync.WaitGroup
	wg.Add(2)
	go drain(outR, deadline.Add(drainGrace), &stdout, &wg)
	go drain(errR, deadline.Add(drainGrace), &stderr, &wg)
	stop := func() {
		endWaits()
		stopDrains(&wg, outR, errR)
	}

	// Closing ctl (deferred) cancels the command if the exchange failed.
	line, err := exchange(ctx, ctl, p.request(cmd, ms), deadline.Add(statusGrace))
	if err != nil {
		stop()
		if ctx.Err() == nil {
			return result{}, fmt.Errorf("%w: %w", errHelperLost, err)
		}
		return result{}, fmt.Errorf("exec helper: %w", err)
	}
	code, err := outcome(ctx, line, cmd, timeout)
	if err != nil {
		stop()
		if out.wasStarved() && errors.Is(err, execprobe.ErrTimeout) {
			// The command waited on a pipe the budget kept full.
			return result{}, r.starvedError(cmd)
		}
		return result{}, err
	}
	if err := waitDrains(ctx, &wg, outR, errR); err != nil {
		return result{}, err
	}
	switch {
	case out.wasStarved():
		return result{}, r.starvedError(cmd)
	case out.wasOver():
		return result{}, &OutputTooLargeError{Stdout: stdout.seen, Stderr: stderr.seen, ExitCode: code, Limit: r.replyLimit}
	case stdout.late || stderr.late:
		return result{}, fmt.Errorf("%w: the output of %q stayed open %s after the command exited", execprobe.ErrTimeout, strings.Join(cmd, " "), drainGrace)
	}
	answered = true
	return result{stdout: stdout.b, stderr: stderr.b, code: code, held: out.holding()}, nil
}

func (r *Runner) starvedError(cmd []string) error {
	return fmt.Errorf("%w: the output of %q waited past its timeout for room in the %d MiB shared by every exec on the node", ErrOutputBudget, strings.Join(cmd, " "), r.budgetSize>>20)
}

// waitDrains waits until both outputs are read to their end. A process
// the command left behind may hold them open for as long as the drains'
// deadline; a caller that gives up meanwhile (the kubelet through the CRI
// proxy, probelet stopping) ends the reads at once instead. It waits on
// the calling goroutine: one more goroutine per probe to watch ctx would
// cost a thread wake-up more than the wait itself.
func waitDrains(ctx context.Context, wg *sync.WaitGroup, files ...*os.File) error {
	stop := context.AfterFunc(ctx, func() { endReads(files) })
	wg.Wait()
	if !stop() {
		// ctx ended before both outputs were read to their end.
		return ctx.Err()
	}
	return nil
}

// stopDrains ends the reads of an output nobody will look at.
func stopDrains(wg *sync.WaitGroup, files ...*os.File) {
	endReads(files)
	wg.Wait()
}

// endReads makes every read of files in progress (or to come) return.
func endReads(files []*os.File) {
	for _, f := range files {
		_ = f.SetReadDeadline(time.Now())
	}
}

// socketpair returns probelet's end (pollable, for deadlines) and the
// helper's end of a unix socket pair.
func socketpair() (ours, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("exec helper socket: %w", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("exec helper socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "probelet-exec control"), os.NewFile(uintptr(fds[1]), "probelet-exec control"), nil
}

// exchange sends the request and reads the helper's status line. A ctx
// that ends shuts the socket for writing: the helper reads EOF, kills the
// command and answers "cancelled".
func exchange(ctx context.Context, ctl *os.File, req []byte, deadline time.Time) (string, error) {
	if err := ctl.SetDeadline(deadline); err != nil {
		return "", err
	}
	if _, err := ctl.Write(req); err != nil {
		return "", fmt.Errorf("sending the request: %w", err)
	}
	stop := context.AfterFunc(ctx, func() {
		if rc, err := ctl.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _ = unix.Shutdown(int(fd), unix.SHUT_WR) })
		}
	})
	defer stop()
	line, err := bufio.NewReaderSize(ctl, 2048).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading its status: %w", err)
	}
	return strings.TrimSuffix(line, "\n"), nil
}

// outcome turns the helper's status line into ExecSync's answer.
func outcome(ctx context.Context, line string, cmd []string, timeout time.Duration) (int32, error) {
	kind, rest, _ := strings.Cut(line, " ")
	switch kind {
	case "exit", "signal":
		n, err := strconv.ParseInt(rest, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("exec helper: status %q", line)
		}
		if kind == "signal" {
			n += 128 // the runtime's exit status of a process killed by a signal
		}
		return int32(n), nil
	case "timeout":
		return 0, fmt.Errorf("%w: %q after %s", execprobe.ErrTimeout, strings.Join(cmd, " "), timeout)
	case "cancelled":
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return 0, context.Canceled
	case "exec-error":
		return 0, fmt.Errorf("unable to start container process: %s", rest)
	case "setup-error":
		return 0, unsupportedf(reasonSetup, "%s", rest)
	case "lsm-error":
		return 0, unsupportedf(reasonLSM, "%s", rest)
	case "gone":
		return 0, fmt.Errorf("%w: %s", errNotRunning, rest)
	case "container-exited":
		return 0, fmt.Errorf("%w: it exited while the command ran", errNotRunning)
	case "paused":
		return 0, errPaused
	}
	return 0, fmt.Errorf("exec helper: status %q", line)
}

// capped keeps the first limit bytes written to it, as far as the call's
// output limits let it.
type capped struct {
	b     []byte
	limit int
	seen  int         // of the first limit bytes, kept or not
	call  *callOutput // nil: no limits but limit
	late  bool        // the pipe was still open at the deadline
}

func (c *capped) write(p []byte) {
	keep := min(len(p), c.limit-c.seen)
	if keep <= 0 {
		return
	}
	c.seen += keep
	if c.call != nil {
		c.call.keep(c, p[:keep])
		return
	}
	c.b = append(c.b, p[:keep]...)
}

// drain reads f to its end, or to deadline, keeping what capped keeps.
func drain(f *os.File, deadline time.Time, c *capped, wg *sync.WaitGroup) {
	defer wg.Done()
	defer f.Close()
	_ = f.SetReadDeadline(deadline)
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		c.write(buf[:n])
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			c.late = true
			return
		case err != nil: // io.EOF: every writer is gone
			return
		}
	}
}
