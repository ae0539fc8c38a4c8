package ebpf

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/probelet/probelet/ebpf/listeners"
	"github.com/probelet/probelet/ebpf/netns"
)

// pathCache maps pod network namespace paths (/proc/<pid>/ns/net) to
// namespace inodes so that a probe does not stat the path every time.
type pathCache struct {
	mu sync.RWMutex
	m  map[string]*pathEntry
}

type pathEntry struct {
	ino  uint32
	used atomic.Bool // probed since the last reconcile
}

func newPathCache() *pathCache { return &pathCache{m: make(map[string]*pathEntry)} }

// inode resolves path. A cached inode is trusted while the namespace has a
// listener: a listening socket holds its namespace alive, so the path has
// not moved on. Otherwise the path is stat'ed (a namespace that is gone must
// not be answered from the table).
func (c *pathCache) inode(path string, table *listeners.Table) (uint32, error) {
	c.mu.RLock()
	e := c.m[path]
	c.mu.RUnlock()
	if e == nil || !table.HasListeners(e.ino) {
		ino, err := netns.Inode(path)
		if err != nil {
			c.drop(path)
			return 0, err
		}
		e = c.set(path, ino)
	}
	if !e.used.Load() {
		e.used.Store(true)
	}
	return e.ino, nil
}

func (c *pathCache) set(path string, ino uint32) *pathEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[path]
	if e == nil || e.ino != ino {
		e = &pathEntry{ino: ino}
		c.m[path] = e
	}
	return e
}

func (c *pathCache) drop(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, path)
}

// entries copies the cache for the reconcile loop.
func (c *pathCache) entries() map[string]*pathEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return maps.Clone(c.m)
}
