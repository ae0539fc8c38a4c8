package prober

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// noRound in scheduler.nextRound says the scheduler sleeps with nothing
// due: it goes round again when a pod changes.
const noRound = math.MinInt64

// coalesceWindow is how much earlier than its due time a worker may tick
// when the scheduler is awake anyway: every worker due within the window
// ticks in the same wake-up. A wake-up costs the process far more CPU than
// an in-memory probe, so probes a few milliseconds apart share one; the
// window stays under the bound probelet keeps to the kubelet's period grid
// (10 ms, or 1% of the period when that is more), and a worker ticking
// early keeps its place on its grid. Nothing ticks late because of it: the
// scheduler still wakes at the earliest due time.
const coalesceWindow = 10 * time.Millisecond

// scheduler decides when each worker ticks: a min-heap of due times, the
// alarm its goroutine sleeps on until the earliest, and the pool that runs
// the probes a round hands over. It knows nothing of pods, results or
// kills: the Manager's round asks it for the due workers and ticks them.
// Every method but run and lag is called under the engine's lock
// (Manager.mu), which also guards the workers' queue fields.
type scheduler struct {
	clock  clock.Clock
	jitter func() float64
	// agentStart is when the agent started: workers made within a period
	// of it start after a random part of their period.
	agentStart time.Time
	queue      dueQueue
	pool       *pool
	// alarm is made by start. parked is set while the scheduler sleeps with
	// its alarm set for the earliest due time; dispatching while a round
	// ticks due workers.
	alarm       alarm
	parked      bool
	dispatching bool
	// looping is set while the scheduler goroutine runs; nextRound is when
	// it is due to go round next (unix nanoseconds, noRound when nothing is
	// due). Both are read without the lock, by lag: a wedged engine may
	// hold it.
	looping   atomic.Bool
	nextRound atomic.Int64
}

func newScheduler(c clock.Clock, jitter func() float64, agentStart time.Time, p *pool) *scheduler {
	s := &scheduler{clock: c, jitter: jitter, agentStart: agentStart, pool: p}
	s.queue.base = c.Now()
	return s
}

// start makes the alarm; until then schedule and nudge only queue.
// onAlarmError hears of an alarm that had to fall back on a Go timer.
func (s *scheduler) start(onAlarmError func(error)) {
	s.alarm = newAlarm(s.clock, onAlarmError)
	s.nextRound.Store(s.clock.Now().UnixNano())
}

// run is the single scheduler goroutine: it goes round (round takes the
// lock and calls due), sleeps on the alarm, and goes round again, until
// ctx ends. Whoever ends ctx fires the alarm (Manager.wakeToStop).
func (s *scheduler) run(ctx context.Context, round func()) {
	s.looping.Store(true)
	defer s.looping.Store(false)
	for {
		round()
		// A fire from ctx's end that the round's alarm setting cleared
		// came after ctx was done, so checking here cannot miss it.
		if ctx.Err() != nil {
			return
		}
		s.alarm.wait()
	}
}

// close stops the pool's runners and releases the alarm; run has ended.
func (s *scheduler) close() {
	s.pool.close()
	if s.alarm != nil {
		s.alarm.close()
	}
}

// lag reports how far the scheduler goroutine is behind its next round,
// by the engine's clock: zero while it sleeps until a due time still
// ahead, or with nothing due at all (a node without probes is not
// stalled); growing while a round that was due has not come — a wedged
// scheduler, or one stuck in a round. running is false before run and
// after it ended. It reads two atomics and never takes the engine's lock.
func (s *scheduler) lag() (lag time.Duration, running bool) {
	if !s.looping.Load() {
		return 0, false
	}
	next := s.nextRound.Load()
	if next == noRound {
		return 0, true
	}
	return max(s.clock.Now().Sub(time.Unix(0, next)), 0), true
}

// due is one round: tick every worker due by now (or within
// coalesceWindow), then set the alarm for the next one and park — one
// critical section, so a nudge either happened before (and its worker
// ticked, or is the next) or fires the alarm after.
func (s *scheduler) due(tick func(w *worker, at time.Time)) {
	s.parked = false
	s.dispatching = true
	now := s.clock.Now()
	horizon := now.Add(coalesceWindow)
	for {
		_, due, ok := s.queue.next()
		if !ok || due.After(horizon) {
			break
		}
		// A worker ticking early ticks as of its due time, so the rules
		// that count time (initial delay) see its place on the grid.
		tick(s.queue.take(), later(now, due))
	}
	s.dispatching = false
	s.sleep()
}

// sleep sets the alarm for the earliest due worker and parks: only a
// parked scheduler counts as idle. A due time already past sets the alarm
// off at once.
func (s *scheduler) sleep() {
	if _, next, ok := s.queue.next(); ok {
		s.nextRound.Store(next.UnixNano())
		s.alarm.set(next)
	} else {
		s.nextRound.Store(noRound)
		s.alarm.disarm()
	}
	s.parked = true
}

// idle reports whether the scheduler sleeps with nothing due by now.
func (s *scheduler) idle() bool {
	if !s.parked {
		return false
	}
	_, due, ok := s.queue.next()
	return !ok || due.After(s.clock.Now())
}

// stopAlarm makes the goroutine's wait return, for the end of run.
func (s *scheduler) stopAlarm() {
	if s.alarm != nil {
		s.alarm.fire()
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// schedule sets w's due time and (re)places it in the queue.
func (s *scheduler) schedule(w *worker, due time.Time) {
	w.due = due
	if s.queue.push(w) {
		// The scheduler is due by w's time now: sleep (or a round under
		// way) sets this again before it parks.
		s.nextRound.Store(due.UnixNano())
		s.nudge()
	}
}

// forget takes w off the schedule.
func (s *scheduler) forget(w *worker) { s.queue.forget(w) }

// scheduleFirst schedules a new worker: at once, or after a random part of
// its period while the agent itself is younger than one period, so an
// agent restart does not fire every probe in the same instant.
func (s *scheduler) scheduleFirst(w *worker) {
	now := s.clock.Now()
	due := now
	if now.Sub(s.agentStart) < w.period {
		j := s.jitter()
		if j < 0 || j >= 1 {
			j = 0 // a broken source must not push probes past their period
		}
		due = now.Add(time.Duration(j * float64(w.period)))
	}
	s.schedule(w, due)
}

// wake makes w tick now; a worker whose probe is in flight ticks as soon
// as the probe ends. Its period restarts from now, like the kubelet's
// manual trigger.
func (s *scheduler) wake(w *worker) {
	switch {
	case w.stopped:
	case w.inFlight:
		w.rewake = true
	default:
		s.schedule(w, s.clock.Now())
	}
}

// reschedule puts w back after its probe ended.
func (s *scheduler) reschedule(w *worker) {
	now := s.clock.Now()
	due := nextTick(w.due, w.period, now)
	if w.rewake {
		w.rewake, due = false, now
	}
	s.schedule(w, due)
}

// nudge wakes the scheduler when the earliest due time moved earlier: its
// alarm may now be set too late. Before run, and while a round is under
// way, the alarm is set afterwards anyway.
func (s *scheduler) nudge() {
	if s.alarm == nil || s.dispatching {
		return
	}
	s.parked = false
	s.alarm.fire()
}

// nextTick returns the worker's next due time on its period grid. A worker
// that overran its period runs once at once and stays on the grid, as a
// ticker that drops missed ticks would.
func nextTick(last time.Time, period time.Duration, now time.Time) time.Time {
	next := last.Add(period)
	if next.After(now) {
		return next
	}
	return last.Add(now.Sub(last) / period * period)
}
