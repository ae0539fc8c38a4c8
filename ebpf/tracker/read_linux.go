package tracker

import (
	"errors"

	"github.com/cilium/ebpf/ringbuf"
	"go.uber.org/zap"

	"github.com/probelet/probelet/ebpf/listeners"
)

// readLoop applies ring buffer samples to the table until the reader is
// closed. It reuses one record buffer for every sample.
func (t *Tracker) readLoop() {
	defer close(t.done)
	var rec ringbuf.Record
	for {
		if err := t.reader.ReadInto(&rec); err != nil {
			if errors.Is(err, ringbuf.ErrClosed) {
				return
			}
			t.log.Error("reading the listener ring buffer failed; the table is no longer updated", zap.Error(err))
			t.stats.readErrors.Add(1)
			t.stopped.Store(true)
			return
		}
		e, err := decodeEvent(rec.RawSample)
		if err != nil {
			t.stats.badSamples.Add(1)
			continue
		}
		t.apply(e)
	}
}

func (t *Tracker) apply(e event) {
	t.stats.events.Add(1)
	switch e.kind {
	case kindAdd:
		l, err := e.listener()
		if err != nil {
			t.stats.badSamples.Add(1)
			return
		}
		t.updateIndex(t.table.Add(l)...)
	case kindRemove:
		if key, ok := t.table.Remove(e.sk, e.cookie); ok {
			t.updateIndex(key)
		}
	case kindFull:
		t.table.MarkFull(e.sk, e.queue, e.backlog)
	case kindMarker:
		t.release(e.sk)
	default:
		t.stats.badSamples.Add(1)
	}
}

// updateIndex rewrites the kernel's (netns, port) → listeners index that
// the accept-queue watch reads. The read loop and Reconcile both call it;
// indexMu keeps each entry's read of the table and write to the map together.
func (t *Tracker) updateIndex(keys ...listeners.PortKey) {
	t.indexMu.Lock()
	defer t.indexMu.Unlock()
	for _, k := range keys {
		if k.Port == 0 {
			continue
		}
		key := trackerPortKey{Netns: k.NetNS, Port: k.Port}
		sks := t.table.PortSKs(k)
		var err error
		if len(sks) == 0 {
			err = t.objs.Ports.Delete(&key)
		} else {
			var val trackerPortVal
			copy(val.Sk[:], sks)
			err = t.objs.Ports.Put(&key, &val)
		}
		if err != nil {
			t.stats.indexErrors.Add(1)
		}
	}
}
