package directexec

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	itu "github.com/probelet/probelet/internal/testutil"
)

// pipeOutput drains two pipes into capped streams sharing out, as run
// does, and returns a write function per stream and a wait for both.
func pipeOutput(t *testing.T, limit int, out *callOutput) (stdout, stderr *capped, write func(f int, n int), done func()) {
	t.Helper()
	stdout, stderr = &capped{limit: limit, call: out}, &capped{limit: limit, call: out}
	if out != nil {
		out.streams = []*capped{stdout, stderr}
	}
	var ws [2]*os.File
	var wg sync.WaitGroup
	for i, c := range []*capped{stdout, stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		ws[i] = w
		wg.Add(1)
		go drain(r, time.Now().Add(time.Minute), c, &wg)
	}
	write = func(f, n int) {
		if _, err := ws[f].Write(bytes.Repeat([]byte{'x'}, n)); err != nil {
			t.Error(err)
		}
	}
	done = func() {
		ws[0].Close()
		ws[1].Close()
		wg.Wait()
	}
	t.Cleanup(done)
	return stdout, stderr, write, done
}

// What a call keeps of its output under the reply limit: all of it up to
// the limit over both streams; past it nothing, and the sizes the runtime
// would have kept of each stream (each capped at the stream limit).
func TestReplyLimit(t *testing.T) {
	for _, tc := range []struct {
		name           string
		stdout, stderr int
		wantOver       bool
		wantSeen       [2]int
	}{
		{name: "under", stdout: 300, stderr: 300, wantSeen: [2]int{300, 300}},
		{name: "exactly", stdout: 500, stderr: 500, wantSeen: [2]int{500, 500}},
		{name: "over together", stdout: 600, stderr: 600, wantOver: true, wantSeen: [2]int{600, 600}},
		{name: "one stream past its own cap", stdout: 5000, stderr: 0, wantSeen: [2]int{800, 0}},
		{name: "both past their caps", stdout: 5000, stderr: 5000, wantOver: true, wantSeen: [2]int{800, 800}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := newCallOutput(context.Background(), 1000, nil, 0, 800)
			stdout, stderr, write, done := pipeOutput(t, 800, out)
			write(0, tc.stdout)
			write(1, tc.stderr)
			done()
			if out.wasOver() != tc.wantOver {
				t.Errorf("over = %v, want %v", out.wasOver(), tc.wantOver)
			}
			if got := [2]int{stdout.seen, stderr.seen}; got != tc.wantSeen {
				t.Errorf("seen %v, want %v", got, tc.wantSeen)
			}
			if tc.wantOver && (stdout.b != nil || stderr.b != nil) {
				t.Errorf("past the limit the call still holds %d and %d bytes, want none", len(stdout.b), len(stderr.b))
			}
			if !tc.wantOver && (len(stdout.b) != tc.wantSeen[0] || len(stderr.b) != tc.wantSeen[1]) {
				t.Errorf("kept %d and %d bytes, want %v", len(stdout.b), len(stderr.b), tc.wantSeen)
			}
		})
	}
}

// The budget is shared: a call past its free bytes takes all it may
// still keep at once, and another waits while it holds it, going on once
// it releases; a call printing less than the free bytes never waits; a
// call still waiting at its deadline keeps nothing and says it starved.
func TestOutputBudget(t *testing.T) {
	const size = 1000 // the whole budget, less than one call may keep
	budget := semaphore.NewWeighted(size)
	call := func(ctx context.Context) *callOutput { return newCallOutput(ctx, 0, budget, size, 16<<20) }
	big := call(context.Background())
	_, _, writeBig, doneBig := pipeOutput(t, 16<<20, big)
	writeBig(0, freeOutput+500)
	doneBig()
	if got := big.holding(); got != size {
		t.Fatalf("the first call holds %d, want the whole budget %d", got, size)
	}

	// A small answer passes while the budget is taken.
	small := call(context.Background())
	stdout, _, writeSmall, doneSmall := pipeOutput(t, 16<<20, small)
	writeSmall(0, 100)
	doneSmall()
	if len(stdout.b) != 100 || small.wasStarved() {
		t.Fatalf("a 100-byte answer kept %d bytes (starved %v) while the budget was taken", len(stdout.b), small.wasStarved())
	}

	// A large one waits for the first to release.
	waiting := call(context.Background())
	stdout, _, writeWaiting, doneWaiting := pipeOutput(t, 16<<20, waiting)
	writeWaiting(0, freeOutput+1000) // the pipe holds what the drain has not read yet
	if waiting.holding() != 0 {
		t.Fatal("the second call took budget the first one holds")
	}
	big.giveBack()
	doneWaiting()
	if len(stdout.b) != freeOutput+1000 || waiting.wasStarved() || waiting.holding() != size {
		t.Fatalf("after the release the second call kept %d bytes (starved %v, holds %d), want %d", len(stdout.b), waiting.wasStarved(), waiting.holding(), freeOutput+1000)
	}

	// One that waits past its deadline starves and keeps nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	starved := call(ctx)
	stdout, stderr, writeStarved, doneStarved := pipeOutput(t, 16<<20, starved)
	writeStarved(1, 10)
	writeStarved(0, freeOutput+1)
	doneStarved()
	if !starved.wasStarved() || stdout.b != nil || stderr.b != nil || starved.holding() != 0 {
		t.Fatalf("starved %v, kept %d and %d bytes, holds %d; want starved, nothing kept or held",
			starved.wasStarved(), len(stdout.b), len(stderr.b), starved.holding())
	}
	waiting.giveBack()
	if !budget.TryAcquire(size) {
		t.Fatal("the budget is not whole once every call gave back")
	}
}

// Ten calls printing more than the budget holds for any two of them all
// finish: none holds part of what it needs while waiting for the rest.
func TestOutputBudgetNeverDeadlocks(t *testing.T) {
	const perCall, size = freeOutput + 4000, 6000 // the budget holds one call's reserve, not two
	budget := semaphore.NewWeighted(size)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			out := newCallOutput(context.Background(), perCall, budget, size, 16<<20)
			stdout, stderr, write, done := pipeOutput(t, 16<<20, out)
			var writes sync.WaitGroup
			writes.Go(func() { write(1, 2000) })
			write(0, perCall-2000)
			writes.Wait()
			done()
			if len(stdout.b)+len(stderr.b) != perCall || out.wasStarved() {
				t.Errorf("kept %d bytes (starved %v), want %d", len(stdout.b)+len(stderr.b), out.wasStarved(), perCall)
			}
			out.giveBack()
		})
	}
	wg.Wait()
}

// Release gives the budget back once, whatever the number of calls.
func TestOutputRelease(t *testing.T) {
	budget := semaphore.NewWeighted(1000)
	if !budget.TryAcquire(1000) {
		t.Fatal("fresh budget")
	}
	o := &Output{budget: budget, held: 1000}
	o.Release()
	o.Release()
	if !budget.TryAcquire(1000) {
		t.Fatal("Release did not give the budget back")
	}
	if budget.TryAcquire(1) {
		t.Fatal("a second Release gave back twice")
	}
	(&Output{}).Release() // the fallback's answer holds nothing
}

func TestWithOutputLimitsRefusesNonsense(t *testing.T) {
	for _, tc := range []struct {
		reply  int
		budget int64
	}{{0, 1 << 20}, {1 << 20, 0}, {-1, 1 << 20}} {
		r := &Runner{}
		if err := WithOutputLimits(tc.reply, tc.budget)(r); err == nil {
			t.Errorf("WithOutputLimits(%d, %d) accepted", tc.reply, tc.budget)
		}
	}
}

// A call past the reply limit keeps nothing, so it gives its budget back
// at once, before its command ends.
func TestPastTheReplyLimitGivesTheBudgetBack(t *testing.T) {
	const size = 4 << 20
	budget := semaphore.NewWeighted(size)
	out := newCallOutput(context.Background(), freeOutput+512<<10, budget, size, 16<<20)
	_, _, write, done := pipeOutput(t, 16<<20, out)
	write(0, freeOutput+256<<10)
	write(1, 512<<10)
	defer done()
	itu.WaitFor(t, "the drains to pass the reply limit", out.wasOver)
	if out.holding() != 0 || !budget.TryAcquire(size) {
		t.Fatalf("holds %d once over; want the whole budget free while the pipes are still open", out.holding())
	}
}
