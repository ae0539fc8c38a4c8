//go:build e2e

package e2e_test

import (
	"fmt"
	"sync"
	"time"
)

// steadyWatch polls `probectl ps -o json` in the background and records
// every moment a watched container is missing, not ready, or has a restart
// issued: what "no false kill, results intact" rules out. probelet being
// unreachable (it is restarting) is not a violation.
type steadyWatch struct {
	stopc      chan struct{}
	done       chan struct{}
	mu         sync.Mutex
	violations []string
	polls      int
}

func watchSteady(d *daemon, ids ...string) *steadyWatch {
	w := &steadyWatch{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stopc:
				return
			case <-time.After(pollEvery):
			}
			w.poll(d, ids)
		}
	}()
	return w
}

func (w *steadyWatch) poll(d *daemon, ids []string) {
	v, err := d.tryPS()
	if err != nil {
		return
	}
	byID := map[string]ctrView{}
	for _, c := range v {
		byID[c.ContainerID] = c
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	for _, id := range ids {
		c, ok := byID[id]
		if !ok || !c.Ready || c.RestartsIssued != 0 {
			w.violations = append(w.violations, fmt.Sprintf("%s %.12s: listed %v, ready %v, restarts issued %d",
				time.Now().Format("15:04:05.000"), id, ok, c.Ready, c.RestartsIssued))
		}
	}
}

// stop ends the watch and returns the violations and how many polls saw
// probelet answer.
func (w *steadyWatch) stop() ([]string, int) {
	close(w.stopc)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.violations, w.polls
}
