package server

import (
	"fmt"
	"strings"

	"github.com/probelet/probelet/prober/explain"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func hasPrefix(s, prefix string) bool { return strings.HasPrefix(s, prefix) }

// errNotFound is the NotFound answer for an unknown ID.
func errNotFound(kind, id string) error {
	if id == "" {
		return status.Errorf(codes.InvalidArgument, "%s ID is empty", kind)
	}
	return status.Errorf(codes.NotFound, "%s %q not found", kind, id)
}

// errAmbiguousID is the answer for an ID prefix that matches several.
func errAmbiguousID(kind, id string) error {
	return status.Errorf(codes.InvalidArgument, "%s ID prefix %q is ambiguous; give more characters", kind, id)
}

// ambiguousRef lists what an ambiguous container reference matched.
func ambiguousRef(ref string, matches []entry) error {
	names := make([]string, 0, len(matches))
	for _, e := range matches {
		names = append(names, fmt.Sprintf("%s (%s/%s/%s)", explain.ShortID(e.ctr.ID), e.namespace(), e.podName(), e.ctr.Name))
	}
	return status.Errorf(codes.InvalidArgument, "container %q is ambiguous, it matches: %s", ref, strings.Join(names, ", "))
}
