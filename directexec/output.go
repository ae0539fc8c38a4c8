package directexec

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"
)

const (
	// freeOutput is how much of each call's output is read without asking
	// the budget: an exec probe's answer is a few bytes, so a tenant that
	// fills the budget delays only calls that print more than this.
	freeOutput = 64 << 10
)

// Output is a command's answer, holding its share of the runner's output
// budget until Release (the CRI proxy releases once the reply is sent).
type Output struct {
	Stdout, Stderr []byte
	ExitCode       int32

	budget *semaphore.Weighted
	held   int64
	once   sync.Once
}

// Release gives back what the output holds of the runner's budget. It is
// safe to call more than once, and on an Output from the fallback runner.
func (o *Output) Release() {
	o.once.Do(func() {
		if o.budget != nil && o.held > 0 {
			o.budget.Release(o.held)
		}
	})
}

// OutputTooLargeError is a command whose output — as much of each stream as
// the runtime keeps — is past the runner's reply limit: the runtime could
// not send it (gRPC's limit) and the kubelet would refuse it, so the
// runner keeps none of it, reads the rest to the end as the runtime does,
// and reports only the sizes.
type OutputTooLargeError struct {
	Stdout, Stderr int // bytes the runtime would have kept of each stream
	ExitCode       int32
	Limit          int
}

func (e *OutputTooLargeError) Error() string {
	return fmt.Sprintf("the command's output (%d bytes of stdout, %d of stderr) is past the reply limit of %d bytes", e.Stdout, e.Stderr, e.Limit)
}

// ErrOutputBudget is a call whose output waited for room in the runner's
// output budget until the call's deadline.
var ErrOutputBudget = errors.New("the exec output budget stayed full")

// WithOutputLimits bounds what the runner's calls keep of their output, as
// the CRI proxy must on behalf of every tenant on the node: one call keeps
// at most reply bytes of both streams together (OutputTooLargeError past
// it), and all calls together hold at most budget bytes beyond the first
// 64 KiB of each. A call whose output passes its first 64 KiB takes at
// once from the budget all it may still keep (up to the reply limit), so
// no two calls each hold part of what both need and wait for the rest: it
// waits for room, its command waiting on a full pipe, until the call's
// deadline (ErrOutputBudget).
func WithOutputLimits(reply int, budget int64) Option {
	return func(r *Runner) error {
		if reply <= 0 || budget <= 0 {
			return fmt.Errorf("directexec: output limits %d (reply) and %d (budget) must be positive", reply, budget)
		}
		r.replyLimit = reply
		r.budget = semaphore.NewWeighted(budget)
		r.budgetSize = budget
		return nil
	}
}

// callOutput is what one call's two output streams share: the bytes kept
// of both, what they hold of the budget, and whether they stopped keeping.
type callOutput struct {
	ctx    context.Context // ends waits for the budget: the call's deadline, or its end
	limit  int             // reply limit, 0 for none
	budget *semaphore.Weighted
	// reserve is what the call takes from the budget once its output
	// passes freeOutput: all it may keep beyond that.
	reserve int64

	mu      sync.Mutex
	cond    *sync.Cond // on mu: the reserve was taken, or not
	waiting bool       // a stream waits for the reserve
	streams []*capped  // stdout and stderr, whose b the lock guards
	kept    int
	outputState
}

// newCallOutput is the shared state of a call whose streams keep at most
// streamMax bytes each.
func newCallOutput(ctx context.Context, limit int, budget *semaphore.Weighted, budgetSize int64, streamMax int) *callOutput {
	most := 2 * streamMax
	if limit > 0 {
		most = min(most, limit)
	}
	o := &callOutput{ctx: ctx, limit: limit, budget: budget, reserve: min(max(int64(most-freeOutput), 1), budgetSize)}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// outputState is where a call's output stands.
type outputState struct {
	held    int64 // of the budget
	over    bool  // past the reply limit: neither stream keeps anything
	starved bool  // the budget had no room before ctx ended
}

// keep appends p to stream c's output if the call's limits let it,
// waiting for the budget the first time the output passes freeOutput
// (without the lock: the other stream may go on meanwhile within the
// free bytes). Past the reply limit, or starved, the call keeps nothing of
// either stream from then on and drops what both kept, so the memory goes
// with the budget.
func (o *callOutput) keep(c *capped, p []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		if o.over || o.starved {
			for _, s := range o.streams {
				s.b = nil
			}
			o.release()
			return
		}
		if o.limit > 0 && o.kept+len(p) > o.limit {
			o.over = true
			continue
		}
		if o.budget == nil || o.held > 0 || o.kept+len(p) <= freeOutput {
			o.kept += len(p)
			c.b = append(c.b, p...)
			return
		}
		if o.waiting {
			// The other stream waits for the reserve: this one waits
			// for it to come.
			o.cond.Wait()
			continue
		}
		o.waiting = true
		o.mu.Unlock()
		err := o.budget.Acquire(o.ctx, o.reserve)
		o.mu.Lock()
		o.waiting = false
		o.cond.Broadcast()
		if err != nil {
			o.starved = true
			continue
		}
		o.held = o.reserve
	}
}

// The accessors below are safe on a nil callOutput (a runner without
// output limits); they are read once both streams are read.

func (o *callOutput) wasStarved() bool { return o.state().starved }

func (o *callOutput) wasOver() bool { return o.state().over }

// holding is what the call holds of the budget, handed to its Output.
func (o *callOutput) holding() int64 { return o.state().held }

func (o *callOutput) state() outputState {
	if o == nil {
		return outputState{}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.outputState
}

// giveBack returns what the call holds of the budget: it keeps nothing.
func (o *callOutput) giveBack() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.release()
}

// release gives back what the call holds of the budget; o.mu is held.
func (o *callOutput) release() {
	if o.budget != nil && o.held > 0 {
		o.budget.Release(o.held)
	}
	o.held = 0
}
