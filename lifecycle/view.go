package lifecycle

import (
	"sort"

	"github.com/probelet/probelet/node"
)

var _ View = (*Cache)(nil)

// Pods returns a snapshot per known sandbox, sorted by namespace, name and
// sandbox ID. Snapshots share maps and slices with the cache, which never
// modifies them in place; readers must not modify them either.
func (c *Cache) Pods() []node.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]node.Pod, 0, len(c.pods))
	for _, e := range c.pods {
		out = append(out, c.snapshot(e))
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.SandboxID < b.SandboxID
	})
	return out
}

// SubscribeEvents delivers lifecycle events; see View.
func (c *Cache) SubscribeEvents(buffer int) (<-chan node.Event, func()) {
	return c.events.Subscribe(buffer)
}
