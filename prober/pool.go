package prober

import (
	"sync"
	"time"
)

// detachAfter is how long a probe may hold one of the pool's runners. A
// probe's own CPU is well under a millisecond; one that has run longer is
// waiting on its target (a silent listener, a long timeoutSeconds, an exec
// child that keeps stdout open), and waiting must cost its pod, not the
// node: its runner is detached from the pool, which starts another for the
// work queued behind it. It is far under the 5% of a 1 s period that probe
// start drift is held to.
const detachAfter = 20 * time.Millisecond

// pool runs probes on at most max attached runner goroutines, so that a
// burst of due probes is smoothed over a bounded number of CPU-bound
// runners. submit never blocks: work waits in a FIFO. Runners are started
// on demand and then park between bursts, so a busy engine neither creates
// goroutines nor regrows their stacks per probe.
//
// A runner whose probe has run for detachAfter is detached: it no longer
// counts against max, finishes its probe, and then rejoins the pool if
// there is room or exits. So no probe waits behind others that wait on
// their targets; the goroutines that exist are at most max plus the probes
// waiting on their targets, each a worker's one probe in flight — the
// kubelet's goroutine per worker, spent only while a probe hangs.
type pool struct {
	mu       sync.Mutex
	work     sync.Cond
	queue    []*worker
	head     int
	active   int // attached runners, parked or running
	idle     int // runners parked and not yet woken for queued work
	waking   int // runners woken or started for queued work, not yet at it
	detached int // runners detached, finishing a long probe
	max      int
	closed   bool
	run      func(*worker)
	wg       sync.WaitGroup
	now      func() time.Time
	// attached are the attached runners' slots; checked for detaching only
	// while work is queued and every runner is busy.
	attached map[*slot]struct{}
	// timer re-checks the running probes while work waits (nil: not armed).
	timer *time.Timer
}

// slot is one runner's: whether it runs a probe, since when, and whether
// it was detached. A runner keeps its slot for its life: nothing is
// allocated per probe.
type slot struct {
	waking   bool // woken or started for queued work, not yet at it
	busy     bool
	start    time.Time
	detached bool
}

func newPool(max int, run func(*worker)) *pool {
	p := &pool{max: max, run: run, now: time.Now, attached: map[*slot]struct{}{}}
	p.work.L = &p.mu
	return p
}

// submit queues w for a runner: a parked one, a new one while fewer than
// max are attached, or one freed by detaching a long probe's.
func (p *pool) submit(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = append(p.queue, w)
	switch {
	case p.idle > 0:
		// The signaller takes the runner off the idle count, so that the
		// next submit does not count on it too before it woke.
		p.idle--
		p.waking++
		p.work.Signal()
	case p.active < p.max:
		p.startRunner()
	default:
		p.detachLong()
	}
}

// startRunner starts an attached runner. Called under the lock.
func (p *pool) startRunner() {
	p.active++
	p.waking++
	s := &slot{waking: true}
	p.attached[s] = struct{}{}
	p.wg.Add(1)
	go p.loop(s)
}

// detachLong detaches the runners whose probes have run for detachAfter
// and starts a runner for each, while work is queued; when none may be
// detached yet it arms the timer for the earliest that may. Called under
// the lock, when every attached runner is busy.
func (p *pool) detachLong() {
	now := p.now()
	var earliest time.Time
	for s := range p.attached {
		if p.unclaimed() == 0 {
			return
		}
		if !s.busy {
			continue
		}
		if at := s.start.Add(detachAfter); now.Before(at) {
			if earliest.IsZero() || at.Before(earliest) {
				earliest = at
			}
			continue
		}
		s.detached = true
		delete(p.attached, s)
		p.active--
		p.detached++
		p.startRunner()
	}
	if p.unclaimed() > 0 && p.timer == nil {
		// None may be detached yet (or the runners are still waking up
		// for earlier work): look again when the earliest may.
		wait := detachAfter
		if !earliest.IsZero() {
			wait = earliest.Sub(now)
		}
		p.timer = time.AfterFunc(wait, p.recheck)
	}
}

// recheck is the timer's: detach what may be while work still waits for a
// runner.
func (p *pool) recheck() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = nil
	if !p.closed && p.idle == 0 && p.unclaimed() > 0 {
		p.detachLong()
	}
}

func (p *pool) queued() int { return len(p.queue) - p.head }

// unclaimed is the queued work no runner is on its way to.
func (p *pool) unclaimed() int { return p.queued() - p.waking }

// loop runs queued work until the pool closes, or until this runner,
// detached by a long probe, finds the pool full again.
func (p *pool) loop(s *slot) {
	defer p.wg.Done()
	for {
		w, ok := p.next(s)
		if !ok {
			return
		}
		p.run(w)
		if !p.done(s) {
			return
		}
	}
}

// done ends the probe of s; it reports whether the runner goes on (it was
// attached, or it rejoins an attached set with room).
func (p *pool) done(s *slot) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.busy = false
	if !s.detached {
		return true
	}
	p.detached--
	if p.active < p.max && !p.closed {
		s.detached = false
		p.attached[s] = struct{}{}
		p.active++
		return true
	}
	return false
}

// next pops the oldest queued worker, parking while there is none; it
// returns false once the pool is closed and drained.
func (p *pool) next(s *slot) (*worker, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.head == len(p.queue) {
		if s.waking { // the work it was woken for went to another runner
			s.waking = false
			p.waking--
		}
		p.queue, p.head = p.queue[:0], 0
		if p.closed {
			p.active--
			delete(p.attached, s)
			return nil, false
		}
		p.idle++
		p.work.Wait() // the signaller (or close) took it off the idle count
		s.waking = true
	}
	if s.waking {
		s.waking = false
		p.waking--
	}
	w := p.queue[p.head]
	p.queue[p.head] = nil
	p.head++
	s.busy, s.start = true, p.now()
	return w, true
}

// runners reports how many runner goroutines exist: attached ones, the
// most probes that ran at once so far up to max (parked runners are kept,
// not retired), and detached ones finishing long probes.
func (p *pool) runners() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.active + p.detached
}

// close lets the runners finish the queued work and exit, and waits for them.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.waking += p.idle // every parked runner wakes
	p.idle = 0
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.work.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}
