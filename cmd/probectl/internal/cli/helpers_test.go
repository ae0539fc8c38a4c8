package cli_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/cmd/probectl/internal/cli"
	"github.com/probelet/probelet/cri/server/servertest"
)

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads (watch, events -f).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// result is one probectl run.
type result struct {
	out, errOut string
	code        int
}

// env points probectl at endpoint through PROBELET_SOCKET, with the
// fixture's clock.
func env(endpoint string) cli.Env {
	return cli.Env{
		Lookup: func(k string) (string, bool) {
			if k == cli.SocketEnv && endpoint != "" {
				return endpoint, true
			}
			return "", false
		},
		Clock: clocktesting.NewFakePassiveClock(servertest.Now),
	}
}

// probectl runs the CLI in-process against endpoint.
func probectl(t *testing.T, endpoint string, args ...string) result {
	t.Helper()
	return probectlCtx(context.Background(), endpoint, nil, args...)
}

func probectlCtx(ctx context.Context, endpoint string, out *syncBuffer, args ...string) result {
	if out == nil {
		out = &syncBuffer{}
	}
	var errOut syncBuffer
	err := cli.Execute(ctx, args, cli.IOStreams{Out: out, ErrOut: &errOut}, env(endpoint))
	return result{out: out.String(), errOut: errOut.String(), code: cli.ExitCode(err)}
}
