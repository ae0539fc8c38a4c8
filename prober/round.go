package prober

import (
	"context"
	"time"
)

// The Manager's side of scheduling: its goroutine's rounds, and what a
// worker's tick does. When is the scheduler's (scheduler.go); what is the
// Manager's.

// loop runs the scheduling goroutines until ctx ends.
func (m *Manager) loop(ctx context.Context) {
	stop := context.AfterFunc(ctx, m.wakeToStop)
	defer stop()
	m.schedule(ctx)
	// The lead may end on ctx's end before the AfterFunc's goroutine fired
	// the alarms; once shutdown marks the engine stopped it never will,
	// and a standby would wait for good: fire them now.
	m.wakeToStop()
}

// schedule runs the scheduling goroutines until ctx ends: the rounds are
// the Manager's, and the scheduler is their state (its queue, alarms and
// who leads), lent nothing. One goroutine leads: it goes round, sleeps
// on the alarm and goes round again. With a watch a second one stands by
// (see quickRun) and the two swap when it takes over. run returns once
// the goroutine leading at the end stopped; one still in an inline probe
// is waited for by close. Whoever ends ctx fires both timers
// (wakeToStop).
func (m *Manager) schedule(ctx context.Context) {
	s := m.sched
	s.looping.Store(true)
	defer s.looping.Store(false)
	if s.watch == nil {
		m.serve(ctx, true)
		return
	}
	s.goroutines.Add(2)
	for _, lead := range []bool{true, false} {
		go func() {
			defer s.goroutines.Done()
			m.serve(ctx, lead)
		}()
	}
	<-s.leadGone
}

// serve is one scheduling goroutine, leading or standing by, until ctx
// ends. At the end the standby takes over from a lead still in an inline
// probe, which ends only once the engine cancels it, after run.
func (m *Manager) serve(ctx context.Context, lead bool) {
	s := m.sched
	for {
		if !lead {
			// One that just ended an inline run the other took over
			// checks first: the stop's fire may have come before the
			// takeover disarmed the watch.
			if ctx.Err() != nil {
				return
			}
			s.watch.Wait()
			s.standbyWakes.Add(1)
			stopping := ctx.Err() != nil
			lead = m.takeOver(stopping)
			if stopping {
				if lead {
					close(s.leadGone)
				}
				return
			}
			continue
		}
		if w := m.dispatchDue(); w != nil && !m.runInline(w) {
			lead = false
			continue
		}
		// A fire from ctx's end that the round's alarm setting cleared
		// came after ctx was done, so checking here cannot miss it.
		if ctx.Err() != nil {
			close(s.leadGone)
			return
		}
		s.alarm.Wait()
	}
}

// dispatchDue is one round of the scheduler; it returns the probe the
// round kept to run inline, if any. The TCP probes that can be answered
// at once (the eBPF table, a connect that completes within the call) are
// answered between the round's two critical sections: they make system
// calls, and the engine's lock is never held across one.
func (m *Manager) dispatchDue() *worker {
	m.mu.Lock()
	m.sched.beginRound(m.tick)
	if len(m.round.instants) == 0 {
		// The common round: nothing to answer off the lock, one
		// critical section.
		defer m.mu.Unlock()
		return m.endRound()
	}
	m.mu.Unlock()

	// Only this goroutine touches the round's lists: rounds never overlap
	// (a standby takes over only after endRound).
	r := &m.round
	for _, w := range r.instants {
		o, ok := m.instant(&w.job)
		r.answered = append(r.answered, answer{o, ok})
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	for i, w := range r.instants {
		if r.answered[i].ok {
			m.finish(w, r.answered[i].o)
		} else {
			m.sched.submit(w) // a dial still under way (j.pending), or declined
		}
	}
	clear(r.instants)
	r.instants, r.answered = r.instants[:0], r.answered[:0]
	return m.endRound()
}

// endRound closes the round under the lock; it returns the probe kept to
// run inline, if any.
func (m *Manager) endRound() *worker {
	w := m.sched.endRound()
	m.notifyIdle()
	return w
}

// roundProbes are the open round's TCP probes to answer without the
// engine's lock, and their answers; the slices are reused, so a round
// allocates nothing.
type roundProbes struct {
	instants []*worker
	answered []answer
}

// answer is an instant probe's outcome, ok when it was answered.
type answer struct {
	o  outcome
	ok bool
}

// runInline runs w's probe on the scheduling goroutine (see quickRun) and
// reports whether that goroutine still leads the rounds. The inline run
// ends before finish reschedules w: a nudge from that is for the lead's
// own alarm, not the standby's.
func (m *Manager) runInline(w *worker) bool {
	o := m.probe(w)
	m.mu.Lock()
	defer m.mu.Unlock()
	lead := m.sched.endInline()
	m.finish(w, o)
	return lead
}

// takeOver is the standby goroutine's: it reports whether it leads now.
func (m *Manager) takeOver(stopping bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sched.takeOver(stopping)
}

// wakeToStop fires the alarm for the end of Run's context, unless the
// engine already stopped (shutdown closes the alarm).
func (m *Manager) wakeToStop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.stopped {
		m.sched.stopAlarm()
	}
}

// SchedulerLag reports how far the scheduler goroutine is behind its next
// round (scheduler.lag). It never takes the engine's lock, so a heartbeat
// can ask it of a wedged engine.
func (m *Manager) SchedulerLag() (lag time.Duration, running bool) {
	return m.sched.lag()
}

// tick is one turn of a worker: decide, then probe, wait or stop.
func (m *Manager) tick(w *worker, now time.Time) {
	switch m.decide(w, now) {
	case verdictProbe:
		m.dispatch(w)
	case verdictStop:
		m.stopWorker(w)
	default:
		m.sched.schedule(w, nextTick(w.due, w.period, now))
	}
}

// dispatch runs w's probe: answered at once when the TCP prober can
// answer from memory or within a non-blocking start, else handed to the
// pool (or kept to run inline) with a snapshot of its target (and the
// probe under way, if begun).
func (m *Manager) dispatch(w *worker) {
	if w.target == nil || w.target.containerID != w.containerID || w.target.originFailed {
		c, _ := w.pod.container(w.name)
		t := prepare(w.spec, &w.pod.pod, c, m.hostScope(&w.pod.pod))
		m.applyOrigin(&t, w.pod)
		w.target = &t
		w.origin = t.originText
	}
	w.job = job{ctx: w.ctx, containerID: w.containerID, target: w.target}
	w.inFlight = true
	m.inflight++
	if m.canInstant(&w.job) {
		m.round.instants = append(m.round.instants, w) // answered after the lock (dispatchDue)
		return
	}
	m.sched.submit(w)
}

// canInstant reports whether j may be answered on the scheduling goroutine:
// a TCP probe with a TCP prober that can answer without waiting.
func (m *Manager) canInstant(j *job) bool {
	t := j.target
	return t.kind == kindTCP && t.err == nil && (m.instantTCP != nil || m.startTCP != nil)
}

// instant answers j on the scheduling goroutine, without the lock, when the
// TCP prober can without waiting: from memory, or with a dial whose answer
// came within the connect (one that did not is left in j for a runner). A
// probe answered so costs less than handing it to a runner: a goroutine
// and often a thread woken per probe.
func (m *Manager) instant(j *job) (outcome, bool) {
	t := j.target
	if t.kind != kindTCP || t.err != nil || j.ctx.Err() != nil {
		return outcome{}, false
	}
	o := outcome{start: m.clock.Now()}
	var ok bool
	if m.instantTCP != nil {
		o.result, o.output, o.method, ok = m.instantTCP.ProbeTCPInstant(t.tcp)
	}
	if !ok && m.startTCP != nil {
		// From the pod's origin, pinned here, off the lock; a pin that
		// fails leaves the probe to a runner, which reports it.
		tt, err := t.tcpFrom()
		if err != nil {
			return outcome{}, false
		}
		o.result, o.output, o.method, j.pending, ok = m.startTCP.StartTCP(tt)
		j.begun = o.start
	}
	o.duration = m.clock.Since(o.start)
	return o, ok
}
