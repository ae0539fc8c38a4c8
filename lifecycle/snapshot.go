package lifecycle

import (
	"sort"

	"github.com/probelet/probelet/node"
)

// snapshot builds the node model's view of one sandbox. The caller holds c.mu.
func (c *Cache) snapshot(e *podEntry) node.Pod {
	pod := node.Pod{
		UID:         e.sb.key(),
		Name:        e.sb.Name,
		Namespace:   e.sb.Namespace,
		SandboxID:   e.sb.ID,
		CreatedAt:   e.sb.CreatedAt,
		Labels:      e.sb.Labels,
		Annotations: e.sb.Annotations,
		IPs:         e.sb.IPs,
		NetNSPath:   e.sb.NetNSPath,
		HostNetwork: e.sb.Network == NetworkHost,
		Pid:         e.sb.Pid,
		Deleting:    e.stopped,
		Containers:  newestPerName(e.ctrs),
	}
	c.withAPI(&pod)
	return pod
}

// newestPerName keeps the latest instance of each container name (a
// restart creates a new instance), sorted by name.
func newestPerName(ctrs map[string]*ctrEntry) []node.Container {
	best := make(map[string]*ctrEntry, len(ctrs))
	for _, ce := range ctrs {
		if cur, ok := best[ce.c.Name]; !ok || newer(ce, cur) {
			best[ce.c.Name] = ce
		}
	}
	out := make([]node.Container, 0, len(best))
	for _, ce := range best {
		out = append(out, ce.c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func newer(a, b *ctrEntry) bool {
	if !a.c.CreatedAt.Equal(b.c.CreatedAt) {
		return a.c.CreatedAt.After(b.c.CreatedAt)
	}
	return a.seq > b.seq
}

// current returns the sandbox the engine should see for a pod key: the
// newest one, as a restarted sandbox keeps the pod's UID.
func (c *Cache) current(key string) *podEntry {
	var best *podEntry
	for _, e := range c.byKey[key] {
		if best == nil || newerPod(e, best) {
			best = e
		}
	}
	return best
}

func newerPod(a, b *podEntry) bool {
	if !a.sb.CreatedAt.Equal(b.sb.CreatedAt) && !a.sb.CreatedAt.IsZero() && !b.sb.CreatedAt.IsZero() {
		return a.sb.CreatedAt.After(b.sb.CreatedAt)
	}
	return a.seq > b.seq
}
