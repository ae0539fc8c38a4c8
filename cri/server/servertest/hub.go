package servertest

import "github.com/probelet/probelet/internal/fanout"

// newHub returns a publisher with the real sources' contract (the one
// fan-out they all use).
func newHub[T any]() *fanout.Hub[T] { return fanout.New[T](nil) }
