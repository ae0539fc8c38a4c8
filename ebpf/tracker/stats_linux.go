package tracker

import (
	"sync/atomic"
)

// Kernel counter slots, as tracker.c's enum counter.
const (
	counterRingbufDrops = 0
	counterLiveFull     = 1
)

type stats struct {
	events      atomic.Uint64
	badSamples  atomic.Uint64
	indexErrors atomic.Uint64
	readErrors  atomic.Uint64
}

// Stats are the tracker's counters since New.
type Stats struct {
	// Events is the number of samples applied.
	Events uint64
	// Lost is the number of events the kernel could not queue because the
	// ring buffer was full; the table may be wrong until reconciled.
	Lost uint64
	// Untracked is the number of listeners the kernel map had no room for.
	Untracked uint64
	// BadSamples counts samples that could not be decoded.
	BadSamples uint64
	// IndexErrors counts failed writes of the accept-queue watch index.
	IndexErrors uint64
}

// Stats reads the counters; Lost and Untracked cost one map lookup each.
func (t *Tracker) Stats() Stats {
	return Stats{
		Events:      t.stats.events.Load(),
		Lost:        t.kernelCounter(counterRingbufDrops),
		Untracked:   t.kernelCounter(counterLiveFull),
		BadSamples:  t.stats.badSamples.Load() + t.stats.readErrors.Load(),
		IndexErrors: t.stats.indexErrors.Load(),
	}
}

func (t *Tracker) kernelCounter(slot uint32) uint64 {
	var v uint64
	if t.objs.Counters == nil || t.objs.Counters.Lookup(slot, &v) != nil {
		return 0
	}
	return v
}
