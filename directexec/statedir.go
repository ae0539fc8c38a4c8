package directexec

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/internal/runtimestate"
)

// relearnEvery bounds how often the runner asks the runtime for its state
// directory again: a directory without bundles is asked about at most this
// often, however many execs find it so.
const relearnEvery = 5 * time.Second

// stateDir is where the runner reads containerd's bundles from: fixed
// (--runtime-state-dir, or no learner), or learned from the runtime and
// learned again when it holds no bundles — the runtime was down when the
// runner started (k3s and RKE2 keep theirs elsewhere and have no unit to
// order against), or it moved.
type stateDir struct {
	learn func(context.Context) (string, error) // nil: fixed
	clock clock.PassiveClock
	log   *zap.Logger

	mu      sync.Mutex
	dir     string
	crio    bool      // the runtime said it is CRI-O
	learned time.Time // when learn last ran
}

// bundle finds the container's bundle, learning the directory again once
// when the current one holds no bundles.
func (s *stateDir) bundle(ctx context.Context, id string) (string, error) {
	dir, b, err := s.find(id)
	var u *unsupported
	if !errors.As(err, &u) || u.reason != reasonState || !s.relearn(ctx, dir) {
		return b, err
	}
	_, b, err = s.find(id)
	return b, err
}

// find looks for the bundle in the current directory, which it returns.
func (s *stateDir) find(id string) (dir, bundle string, err error) {
	s.mu.Lock()
	dir, crio := s.dir, s.crio
	s.mu.Unlock()
	if crio {
		return dir, "", unsupportedf(reasonRuntime, "the runtime is CRI-O: direct exec reads containerd's bundles only")
	}
	bundle, err = findBundle(dir, id)
	return dir, bundle, err
}

// relearn asks the runtime for its state directory, unless it was asked
// within relearnEvery, and says whether that changed anything worth a new
// look (a new directory, or CRI-O).
func (s *stateDir) relearn(ctx context.Context, stale string) bool {
	if s.learn == nil {
		return false
	}
	s.mu.Lock()
	now := s.clock.Now()
	if s.dir != stale || s.crio {
		s.mu.Unlock()
		return true // learned meanwhile by another exec
	}
	if !s.learned.IsZero() && now.Sub(s.learned) < relearnEvery {
		s.mu.Unlock()
		return false
	}
	s.learned = now
	s.mu.Unlock()
	dir, err := s.learn(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case errors.Is(err, runtimestate.ErrCRIO):
		s.crio = true
		s.log.Info("Direct exec reads containerd's bundles only: on CRI-O every exec goes through the runtime (reason runtime)")
		return true
	case err != nil:
		s.log.Warn("Cannot learn containerd's state directory; exec probes go through the runtime (reason state) until it answers",
			zap.String("dir", stale), zap.Error(err))
		return false
	case dir == stale:
		return false
	}
	s.log.Info("Direct exec reads OCI bundles from containerd's state directory, learned again",
		zap.String("dir", dir), zap.String("was", stale))
	s.dir = dir
	return true
}
