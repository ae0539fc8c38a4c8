package server

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ref is a parsed container reference. One part is an ID prefix or a pod
// name; two parts are pod/container or namespace/pod; three parts are
// namespace/pod/container. A reference matches every container any of its
// readings names.
type ref struct {
	raw   string
	parts []string
}

// parseRef parses a container reference; empty is the match-all ref.
func parseRef(raw string) (ref, error) {
	r := ref{raw: raw}
	parts := strings.Split(raw, "/")
	for _, p := range parts {
		if p == "" && raw != "" {
			return r, status.Errorf(codes.InvalidArgument,
				"container %q: want an ID prefix, pod/container or namespace/pod/container (empty part)", raw)
		}
	}
	if len(parts) > 3 {
		return r, status.Errorf(codes.InvalidArgument,
			"container %q: want an ID prefix, pod/container or namespace/pod/container (too many parts)", raw)
	}
	r.parts = parts
	return r, nil
}

// matches reports whether a container with these identifiers is referred to.
func (r ref) matches(id, namespace, pod, container string) bool {
	p := r.parts
	switch len(p) {
	case 1:
		return strings.HasPrefix(id, p[0]) || p[0] == pod
	case 2:
		return (p[0] == pod && p[1] == container) || (p[0] == namespace && p[1] == pod)
	}
	return p[0] == namespace && p[1] == pod && p[2] == container
}

func (r ref) matchesEntry(e entry) bool {
	return r.matches(e.ctr.ID, e.namespace(), e.podName(), e.ctr.Name)
}

// filter returns the entries the ref matches.
func (r ref) filter(entries []entry) []entry {
	var out []entry
	for _, e := range entries {
		if r.matchesEntry(e) {
			out = append(out, e)
		}
	}
	return out
}

// resolve returns the one entry the ref names. A full container ID wins
// over longer IDs it happens to prefix.
func (r ref) resolve(entries []entry) (entry, error) {
	if r.raw == "" {
		return entry{}, status.Error(codes.InvalidArgument, "container: a container ID prefix, pod/container or namespace/pod/container is required")
	}
	matches := r.filter(entries)
	for _, e := range matches {
		if e.ctr.ID == r.raw {
			return e, nil
		}
	}
	switch len(matches) {
	case 0:
		return entry{}, status.Errorf(codes.NotFound, "container %q not found", r.raw)
	case 1:
		return matches[0], nil
	}
	return entry{}, ambiguousRef(r.raw, matches)
}
