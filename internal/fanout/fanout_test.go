package fanout_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/probelet/probelet/internal/fanout"
)

func TestPublishNeverBlocksAndCountsLosses(t *testing.T) {
	var drops atomic.Int64
	h := fanout.New[int](func() { drops.Add(1) })
	slow, cancelSlow := h.Subscribe(1) // never read
	defer cancelSlow()
	fast, cancelFast := h.Subscribe(10)
	defer cancelFast()
	for i := range 5 {
		h.Publish(i)
	}
	if got := len(fast); got != 5 {
		t.Fatalf("fast subscriber got %d values, want 5", got)
	}
	if got := <-slow; got != 0 {
		t.Fatalf("slow subscriber got %d first, want 0", got)
	}
	if _, dropped, _ := h.Stats(); dropped != 4 || drops.Load() != 4 {
		t.Fatalf("dropped = %d (callback %d), want 4", dropped, drops.Load())
	}
}

func TestBufferIsAtLeastOne(t *testing.T) {
	h := fanout.New[string](nil)
	ch, cancel := h.Subscribe(0)
	defer cancel()
	h.Publish("x")
	if got := <-ch; got != "x" {
		t.Fatalf("got %q, want x", got)
	}
}

func TestCancelAndCloseCloseOnce(t *testing.T) {
	h := fanout.New[int](nil)
	a, cancelA := h.Subscribe(1)
	b, cancelB := h.Subscribe(1)
	cancelA()
	cancelA()
	if _, ok := <-a; ok {
		t.Fatal("a cancelled subscription is open")
	}
	if !h.Active() {
		t.Fatal("hub with a live subscriber is not active")
	}
	h.Close()
	cancelB() // after Close: no double close
	if _, ok := <-b; ok {
		t.Fatal("Close left a subscription open")
	}
	late, cancelLate := h.Subscribe(1)
	cancelLate()
	if _, ok := <-late; ok {
		t.Fatal("a subscription after Close is open")
	}
	if subs, _, cancelled := h.Stats(); subs != 0 || cancelled != 1 || h.Active() {
		t.Fatalf("stats = %d subscribers, %d cancelled; active %v", subs, cancelled, h.Active())
	}
	h.Publish(1) // no subscribers, no panic
}

func TestConcurrentPublishSubscribeCancel(t *testing.T) {
	h := fanout.New[int](nil)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 200 {
				h.Publish(i)
			}
		}()
		go func() {
			defer wg.Done()
			for range 50 {
				ch, cancel := h.Subscribe(2)
				select {
				case <-ch:
				default:
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	h.Close()
}

func BenchmarkPublish(b *testing.B) {
	h := fanout.New[int](nil)
	for range 3 {
		ch, cancel := h.Subscribe(1024)
		defer cancel()
		go func() {
			for range ch {
			}
		}()
	}
	b.ReportAllocs()
	for i := range b.N {
		h.Publish(i)
	}
}
