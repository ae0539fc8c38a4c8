package prober

import (
	"context"
	"errors"
)

var errNotRunning = errors.New("prober: scheduler not running")

// WaitIdle blocks until the engine has caught up with its clock: no worker
// is due at the clock's current time, no probe is queued or running and no
// kill is in flight. With a fake clock, tests Step the clock and then
// WaitIdle instead of sleeping. Called before Run, it waits for Run to
// start. It fails when the engine has stopped or ctx ends first.
func (m *Manager) WaitIdle(ctx context.Context) error {
	select {
	case <-m.runStarted:
	case <-m.done:
		return errNotRunning
	case <-ctx.Done():
		return ctx.Err()
	}
	for {
		m.mu.Lock()
		if m.stopped {
			m.mu.Unlock()
			return errNotRunning
		}
		if m.idleLocked() {
			m.mu.Unlock()
			return nil
		}
		ch, err := m.idleWaitLocked()
		m.mu.Unlock()
		if err != nil {
			return err
		}
		select {
		case <-ch:
		case <-m.done:
			return errNotRunning
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// idleWaitLocked returns the channel notifyIdle closes.
func (m *Manager) idleWaitLocked() (chan struct{}, error) {
	if !m.running || m.stopped {
		return nil, errNotRunning
	}
	if m.idleCh == nil {
		m.idleCh = make(chan struct{})
	}
	return m.idleCh, nil
}

// idleLocked reports whether the scheduler sleeps and nothing is due,
// queued, running or killing.
func (m *Manager) idleLocked() bool {
	return m.inflight == 0 && m.killing == 0 && m.sched.idle()
}

// notifyIdle releases WaitIdle callers once the engine is idle; it costs
// nothing when nobody waits.
func (m *Manager) notifyIdle() {
	if m.idleCh != nil && m.idleLocked() {
		close(m.idleCh)
		m.idleCh = nil
	}
}
