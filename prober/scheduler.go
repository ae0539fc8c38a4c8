package prober

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/probelet/probelet/quietio"
	"github.com/probelet/probelet/quietio/timerfile"
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

// A round's last probe that waits on its target (any but a TCP probe
// answered at once) runs on the scheduling goroutine itself when its
// previous run took under quickRun: handing it to a pool runner wakes a
// second thread, which costs an idle agent more than a quick probe. While
// it runs, a standby goroutine waits on a second timer file (the watch)
// set for the next round or inlineLimit, whichever comes first, and takes
// the rounds over if it goes off: a probe that turns out slow delays the
// others by inlineLimit at most, the bound the pool's detachAfter keeps.
// On any clock (the watch is an alarm of the engine's clock); with
// --io=std every probe goes to the pool.
const (
	quickRun    = 5 * time.Millisecond
	inlineLimit = detachAfter
)

// scheduler decides when each worker ticks: a min-heap of due times, the
// alarm its goroutine sleeps on until the earliest, and the pool that runs
// the probes a round hands over (but one it may run itself: quickRun). It
// knows nothing of pods, results or kills: the Manager's round asks it for
// the due workers and ticks them.
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
	alarm       timerfile.Alarm
	parked      bool
	dispatching bool
	// Probes run inline (see quickRun). watch is the standby's alarm (nil:
	// nothing runs inline). standby is set while a goroutine waits
	// on it to take over; candidate is the round's probe kept for the
	// scheduling goroutine; inline is the probe it runs, and tookOver says
	// the standby took the rounds over meanwhile. The goroutines are
	// counted in goroutines; leadGone is closed by the one that ends run.
	watch     timerfile.Alarm
	stopping  bool // set by stopAlarm: the watch is never disarmed again
	standby   bool
	candidate *worker
	inline    *worker
	tookOver  bool
	// inlined, takenOver and standbyWakes count inline runs, takeovers
	// and the standby's wake-ups (tests read them).
	inlined      atomic.Int64
	takenOver    atomic.Int64
	standbyWakes atomic.Int64
	goroutines   sync.WaitGroup
	leadGone     chan struct{}
	// looping is set while the scheduler goroutine runs; nextRound is when
	// it is due to go round next (unix nanoseconds, noRound when nothing is
	// due). Both are read without the lock, by lag: a wedged engine may
	// hold it.
	looping   atomic.Bool
	nextRound atomic.Int64
	// roundAt is when the open round began.
	roundAt time.Time
}

func newScheduler(c clock.Clock, jitter func() float64, agentStart time.Time, p *pool) *scheduler {
	s := &scheduler{clock: c, jitter: jitter, agentStart: agentStart, pool: p}
	s.queue.base = c.Now()
	return s
}

// start makes the alarm; until then schedule and nudge only queue.
// onAlarmError hears of an alarm that had to fall back on a Go timer.
func (s *scheduler) start(onAlarmError func(error)) {
	s.alarm = timerfile.New(s.clock, "prober-alarm", onAlarmError)
	if !quietio.Off() {
		// The standby's watch is an alarm of the same clock: a fake
		// clock's in tests, so the fast suite runs the inline path
		// production runs. --io=std: every probe goes to the pool.
		s.watch, s.standby = timerfile.New(s.clock, "prober-standby", onAlarmError), true
	}
	s.leadGone = make(chan struct{})
	s.nextRound.Store(s.clock.Now().UnixNano())
}

// close stops the pool's runners and the scheduling goroutines and
// releases the timers; run has ended and every probe's context is done.
func (s *scheduler) close() {
	s.pool.close()
	s.goroutines.Wait()
	if s.alarm != nil {
		s.alarm.Close()
	}
	if s.watch != nil {
		s.watch.Close()
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

// beginRound starts a round: it ticks every worker due by now (or within
// coalesceWindow) and leaves the round open (dispatching) for the probes
// the Manager answers without its lock; endRound closes it. Nudges while
// it is open fire nothing: endRound sets the alarm for the earliest due
// time whatever came meanwhile.
func (s *scheduler) beginRound(tick func(w *worker, at time.Time)) {
	s.parked = false
	s.dispatching = true
	now := s.clock.Now()
	s.roundAt = now
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
}

// endRound ends the round: it sets the alarm for the next due worker and
// parks — in the critical section that closes the round, so a nudge either
// came before (and its worker is the next) or fires the alarm after. It
// returns the probe the round kept to run inline (submit), with the watch
// set for it.
func (s *scheduler) endRound() *worker {
	s.dispatching = false
	s.sleep()
	w := s.candidate
	if w != nil {
		s.candidate, s.inline = nil, w
		s.inlined.Add(1)
		watchUntil := s.roundAt.Add(inlineLimit)
		if _, next, ok := s.queue.next(); ok && next.Before(watchUntil) {
			watchUntil = next
		}
		s.watch.Set(watchUntil)
	}
	return w
}

// submit hands w's probe to the pool; in a round, with a goroutine
// standing by, it keeps the last quick one for the scheduling goroutine
// instead (see quickRun).
func (s *scheduler) submit(w *worker) {
	if !s.dispatching || !s.standby || s.stopping || !w.quick {
		s.pool.submit(w)
		return
	}
	if s.candidate != nil {
		s.pool.submit(s.candidate)
	}
	s.candidate = w
}

// endInline is the end of an inline run: it reports whether its goroutine
// still leads, or stands by now that the other took over.
func (s *scheduler) endInline() (lead bool) {
	s.inline = nil
	if !s.stopping {
		// Once stopping, the stop's fire must stay for a standby that
		// has not woken yet.
		s.watch.Disarm()
	}
	if s.tookOver {
		s.tookOver, s.standby = false, true
		return false
	}
	return true
}

// takeOver is the standby's, woken by the watch: it leads from now on if a
// probe still runs inline; a wake-up left over from an earlier run is
// ignored. Once stopping, no probe runs inline any more.
func (s *scheduler) takeOver(stopping bool) bool {
	if stopping {
		// The standby saw ctx end before stopAlarm ran: the same.
		s.stopping, s.standby = true, false
	}
	if s.inline == nil || s.tookOver {
		if !s.stopping {
			// A wake-up left over from an earlier run: the watch must
			// not stay in the past, or every wait would return at once.
			s.watch.Disarm()
		}
		return false
	}
	s.tookOver, s.standby = true, false
	s.takenOver.Add(1)
	if !s.stopping {
		// The watch went off (its time stays in the past) or was fired:
		// disarmed, the next standby's wait blocks until the next inline
		// run sets it. A stop's fire stays, for the goroutine still in
		// the probe.
		s.watch.Disarm()
	}
	return true
}

// sleep sets the alarm for the earliest due worker and parks: only a
// parked scheduler counts as idle. A due time already past sets the alarm
// off at once.
func (s *scheduler) sleep() {
	if _, next, ok := s.queue.next(); ok {
		s.nextRound.Store(next.UnixNano())
		s.alarm.Set(next)
	} else {
		s.nextRound.Store(noRound)
		s.alarm.Disarm()
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

// stopAlarm makes the goroutines' waits return, for the end of run.
func (s *scheduler) stopAlarm() {
	s.stopping = true
	if s.alarm != nil {
		s.alarm.Fire()
	}
	if s.watch != nil {
		s.watch.Fire()
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
	s.alarm.Fire()
	if s.inline != nil && !s.tookOver {
		// The lead is in a probe: the standby takes the round.
		s.watch.Fire()
	}
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
