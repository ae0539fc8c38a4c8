package results_test

import (
	"sync"
	"testing"

	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

func TestCacheSetReportsChangeOnly(t *testing.T) {
	k := results.Key{ContainerID: "c1", Type: probespec.Readiness}
	steps := []struct {
		set  results.Result
		want bool
	}{
		{results.Failure, true}, // first value is a change
		{results.Failure, false},
		{results.Success, true},
		{results.Success, false},
		{results.Unknown, true},
	}
	c := results.NewCache()
	for i, s := range steps {
		if got := c.Set(k, s.set); got != s.want {
			t.Fatalf("step %d: Set(%v) changed = %v, want %v", i, s.set, got, s.want)
		}
		if got, ok := c.Get(k); !ok || got != s.set {
			t.Fatalf("step %d: Get = %v, %v; want %v, true", i, got, ok, s.set)
		}
	}
}

func TestCacheKeysAreIndependent(t *testing.T) {
	c := results.NewCache()
	live := results.Key{ContainerID: "c1", Type: probespec.Liveness}
	ready := results.Key{ContainerID: "c1", Type: probespec.Readiness}
	other := results.Key{ContainerID: "c2", Type: probespec.Liveness}
	c.Set(live, results.Success)
	if !c.Set(ready, results.Success) {
		t.Fatal("a different type of the same container must be its own key")
	}
	if !c.Set(other, results.Success) {
		t.Fatal("a different container must be its own key")
	}
	if c.Len() != 3 {
		t.Fatalf("Len = %d, want 3", c.Len())
	}
}

func TestCacheRemoveIsIdempotent(t *testing.T) {
	c := results.NewCache()
	k := results.Key{ContainerID: "c1", Type: probespec.Startup}
	c.Set(k, results.Unknown)
	if !c.Remove(k) {
		t.Fatal("first Remove must report the result it dropped")
	}
	if c.Remove(k) {
		t.Fatal("second Remove must be a no-op")
	}
	if _, ok := c.Get(k); ok {
		t.Fatal("removed key still present")
	}
	if !c.Set(k, results.Unknown) {
		t.Fatal("Set after Remove must count as a change")
	}
}

func TestCacheConcurrentUse(t *testing.T) {
	c := results.NewCache()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := results.Key{ContainerID: "c", Type: probespec.Types[i%3]}
			for j := range 100 {
				c.Set(k, results.Result(j%2))
				c.Get(k)
				if j%10 == 0 {
					c.Remove(k)
				}
			}
		}()
	}
	wg.Wait()
}
