package prober

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// loop is the single scheduler goroutine: it sleeps on one timer set to
// the earliest due worker, runs every due worker's tick and goes back to
// sleep. UpdatePod and finished probes nudge it through wakeCh.
func (m *Manager) loop(ctx context.Context) {
	timer := m.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next, ok, gen := m.dispatchDue()
		m.arm(timer, next, ok)
		m.park(gen)
		select {
		case <-ctx.Done():
			return
		case <-m.wakeCh:
		case <-timer.C():
		}
	}
}

// arm points timer at next, or leaves it stopped when nothing is scheduled.
// The channel is drained first so a fake clock never blocks sending a
// second tick.
func (m *Manager) arm(timer clock.Timer, next time.Time, ok bool) {
	if !timer.Stop() {
		select {
		case <-timer.C():
		default:
		}
	}
	if !ok {
		return
	}
	d := next.Sub(m.clock.Now())
	if d <= 0 {
		// The clock moved past next meanwhile; a fake timer would only
		// fire at the next step, so go round again now.
		m.signal()
		return
	}
	timer.Reset(d)
}

// park records that the scheduler sleeps with its timer set for the
// earliest due worker, unless the queue changed since dispatchDue (then
// wakeCh is already signalled). Only a parked scheduler counts as idle.
func (m *Manager) park(gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen == m.gen {
		m.parked = true
		m.notifyIdle()
	}
}

// dispatchDue ticks every worker due by now and returns the next due time
// and the queue generation it saw.
func (m *Manager) dispatchDue() (next time.Time, ok bool, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.parked = false
	now := m.clock.Now()
	for {
		_, due, ok := m.queue.next()
		if !ok || due.After(now) {
			return due, ok, m.gen
		}
		m.tick(m.queue.take(), now)
	}
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
		m.nudge()
	}
}

// dispatch hands w's probe to the pool with a snapshot of its target.
func (m *Manager) dispatch(w *worker) {
	if w.target == nil || w.target.containerID != w.containerID {
		c, _ := w.pod.container(w.name)
		t := prepare(w.spec, &w.pod.pod, c)
		w.target = &t
	}
	w.job = job{ctx: w.ctx, containerID: w.containerID, target: w.target}
	w.inFlight = true
	m.inflight++
	m.pool.submit(w)
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
// timer may now be set too late.
func (m *Manager) nudge() {
	m.gen++
	m.parked = false
	m.signal()
}

// signal wakes the scheduler loop without blocking.
func (m *Manager) signal() {
	select {
	case m.wakeCh <- struct{}{}:
	default:
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
