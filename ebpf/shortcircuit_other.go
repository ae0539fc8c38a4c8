//go:build !linux

package ebpf

import (
	"context"
	"errors"
)

// errUnsupported is why the short-circuit never loads off Linux.
var errUnsupported = errors.New("the eBPF TCP short-circuit needs Linux")

func newShortCircuit(context.Context, scConfig) (shortCircuit, error) {
	return nil, errUnsupported
}
