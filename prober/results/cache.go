package results

import (
	"sync"

	"github.com/probelet/probelet/probespec"
)

// Key names one published result: a container instance and a probe type.
type Key struct {
	// ContainerID is the runtime's container ID; a restarted container has a new one.
	ContainerID string
	// Type is the probe type.
	Type probespec.Type
}

// Cache holds the published result per container and probe type, like the
// kubelet's results managers (one map for all three types). It is safe for
// concurrent use.
type Cache struct {
	mu sync.RWMutex
	m  map[Key]Result
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{m: make(map[Key]Result)}
}

// Set publishes r for k and reports whether the published value changed:
// callers emit an update only then.
func (c *Cache) Set(k Key, r Result) (changed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.m[k]
	if ok && old == r {
		return false
	}
	c.m[k] = r
	return true
}

// Get returns the published result for k, if there is one.
func (c *Cache) Get(k Key) (Result, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.m[k]
	return r, ok
}

// Remove drops k's result; removing a missing key is a no-op. It reports
// whether there was a result.
func (c *Cache) Remove(k Key) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[k]
	delete(c.m, k)
	return ok
}

// Len returns how many results are published.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
