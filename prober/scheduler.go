package prober

import (
	"context"
	"math"
	"time"
)

// noRound in Manager.nextRound says the scheduler sleeps with nothing due:
// it goes round again when a pod changes.
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

// loop is the single scheduler goroutine: it sleeps on the alarm, set to
// the earliest due worker, runs every due worker's tick and goes back to
// sleep. UpdatePod and finished probes fire the alarm when the earliest
// due time moves earlier; the end of ctx fires it too.
func (m *Manager) loop(ctx context.Context) {
	stop := context.AfterFunc(ctx, m.wakeToStop)
	defer stop()
	for {
		m.dispatchDue()
		// A fire from ctx's end that dispatchDue's set cleared came after
		// ctx was done, so checking here cannot miss it.
		if ctx.Err() != nil {
			return
		}
		m.alarm.wait()
	}
}

// SchedulerLag reports how far the scheduler goroutine is behind its next
// round, by the engine's clock: zero while it sleeps until a due time still
// ahead, or with nothing due at all (a node without probes is not stalled);
// growing while a round that was due has not come — a wedged scheduler, or
// one stuck in a round. running is false before Run and after it ended.
// It reads two atomics and never takes the engine's lock, so a heartbeat
// can ask it of a wedged engine.
func (m *Manager) SchedulerLag() (lag time.Duration, running bool) {
	if !m.looping.Load() {
		return 0, false
	}
	next := m.nextRound.Load()
	if next == noRound {
		return 0, true
	}
	return max(m.clock.Now().Sub(time.Unix(0, next)), 0), true
}

// wakeToStop fires the alarm for the end of Run's context, unless the
// engine already stopped (shutdown closes the alarm).
func (m *Manager) wakeToStop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.stopped {
		m.alarm.fire()
	}
}

// dispatchDue ticks every worker due by now (or within coalesceWindow),
// then sets the alarm for the next one and parks: one critical section, so
// a nudge either happened before (and its worker ticked, or is the next)
// or fires the alarm after.
func (m *Manager) dispatchDue() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.parked = false
	m.dispatching = true
	now := m.clock.Now()
	horizon := now.Add(coalesceWindow)
	for {
		_, due, ok := m.queue.next()
		if !ok || due.After(horizon) {
			break
		}
		// A worker ticking early ticks as of its due time, so the rules
		// that count time (initial delay) see its place on the grid.
		m.tick(m.queue.take(), later(now, due))
	}
	m.dispatching = false
	m.sleep()
}

// sleep sets the alarm for the earliest due worker and parks: only a
// parked scheduler counts as idle. Called under the lock.
func (m *Manager) sleep() {
	_, next, ok := m.queue.next()
	if !ok {
		m.nextRound.Store(noRound)
		m.alarm.disarm()
	} else if d := next.Sub(m.clock.Now()); d > 0 {
		m.nextRound.Store(next.UnixNano())
		m.alarm.set(d)
		// A fake clock stepped between Now and set moved the timer's
		// target a whole step past next, and fires it only at the step
		// after: go round now instead (a real clock's gap is harmless).
		if !m.clock.Now().Before(next) {
			m.alarm.fire()
		}
	} else {
		// The clock moved past next meanwhile; a fake timer would only
		// fire at the next step, so go round again now.
		m.alarm.fire()
		return
	}
	m.parked = true
	m.notifyIdle()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// tick is one turn of a worker: decide, then probe, wait or stop.
func (m *Manager) tick(w *worker, now time.Time) {
	switch m.decide(w, now) {
	case verdictProbe:
		m.dispatch(w)
	case verdictStop:
		m.stopWorker(w)
	default:
		m.schedule(w, nextTick(w.due, w.period, now))
	}
}

// schedule sets w's due time and (re)places it in the queue.
func (m *Manager) schedule(w *worker, due time.Time) {
	w.due = due
	if m.queue.push(w) {
		// The scheduler is due by w's time now: sleep (or a round under
		// way) sets this again before it parks.
		m.nextRound.Store(due.UnixNano())
		m.nudge()
	}
}

// dispatch runs w's probe: answered at once when the TCP prober can answer
// from memory, else handed to the pool with a snapshot of its target.
func (m *Manager) dispatch(w *worker) {
	if w.target == nil || w.target.containerID != w.containerID {
		c, _ := w.pod.container(w.name)
		t := prepare(w.spec, &w.pod.pod, c, m.hostScope(&w.pod.pod))
		w.target = &t
	}
	w.job = job{ctx: w.ctx, containerID: w.containerID, target: w.target}
	w.inFlight = true
	m.inflight++
	if o, ok := m.instant(w.target); ok {
		m.finish(w, o)
		return
	}
	m.pool.submit(w)
}

// instant answers t on the scheduling goroutine, under the lock, when the
// TCP prober can without waiting; a probe answered from memory costs less
// than handing it to a runner.
func (m *Manager) instant(t *target) (outcome, bool) {
	if m.instantTCP == nil || t.kind != kindTCP || t.err != nil {
		return outcome{}, false
	}
	o := outcome{start: m.clock.Now()}
	var ok bool
	o.result, o.output, o.method, ok = m.instantTCP.ProbeTCPInstant(t.tcp)
	o.duration = m.clock.Since(o.start)
	return o, ok
}

// scheduleFirst schedules a new worker: at once, or after a random part of
// its period while the agent itself is younger than one period, so an
// agent restart does not fire every probe in the same instant.
func (m *Manager) scheduleFirst(w *worker) {
	now := m.clock.Now()
	due := now
	if now.Sub(m.agentStart) < w.period {
		j := m.jitter()
		if j < 0 || j >= 1 {
			j = 0 // a broken source must not push probes past their period
		}
		due = now.Add(time.Duration(j * float64(w.period)))
	}
	m.schedule(w, due)
}

// wake makes w tick now; a worker whose probe is in flight ticks as soon
// as the probe ends. Its period restarts from now, like the kubelet's
// manual trigger.
func (m *Manager) wake(w *worker) {
	switch {
	case w.stopped:
	case w.inFlight:
		w.rewake = true
	default:
		m.schedule(w, m.clock.Now())
	}
}

// reschedule puts w back after its probe ended.
func (m *Manager) reschedule(w *worker) {
	now := m.clock.Now()
	due := nextTick(w.due, w.period, now)
	if w.rewake {
		w.rewake, due = false, now
	}
	m.schedule(w, due)
}

// nudge wakes the scheduler when the earliest due time moved earlier: its
// alarm may now be set too late. Before Run, and while the scheduler
// dispatches, it sets its alarm afterwards anyway.
func (m *Manager) nudge() {
	if m.alarm == nil || m.dispatching {
		return
	}
	m.parked = false
	m.alarm.fire()
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
