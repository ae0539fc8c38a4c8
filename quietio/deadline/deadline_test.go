package deadline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probelet/probelet/quietio/deadline"
)

type withDeadline func(context.Context, time.Time) (context.Context, context.CancelFunc)

var impls = []struct {
	name string
	with withDeadline
}{
	{"context", context.WithDeadline},
	{"deadline", deadline.WithDeadline},
}

type key struct{}

var errStop = errors.New("stopped by its owner")

// What a context from deadline.WithDeadline shows — itself, its children,
// what waits on it — is what one from context.WithDeadline shows, in each
// way a probe's context ends.
func TestBehavesAsContextWithDeadline(t *testing.T) {
	const d = 30 * time.Millisecond
	tests := []struct {
		name string
		run  func(with withDeadline) []string
	}{
		{"the deadline passes", func(with withDeadline) []string {
			parent := context.WithValue(context.Background(), key{}, "v")
			at := time.Now().Add(d)
			ctx, cancel := with(parent, at)
			defer cancel()
			child, stop := context.WithCancel(ctx)
			defer stop()
			later, stopLater := context.WithTimeout(ctx, time.Hour)
			defer stopLater()
			called := make(chan struct{})
			context.AfterFunc(ctx, func() { close(called) })
			got := []string{observe("before", ctx), observe("child before", child)}
			dl, ok := later.Deadline()
			got = append(got, fmt.Sprintf("a later timeout's deadline is the earlier: %v %v", dl.Equal(at), ok))
			<-ctx.Done()
			got = append(got, fmt.Sprintf("not early: %v", !time.Now().Before(at)))
			<-called
			<-child.Done()
			<-later.Done()
			return append(got, observe("after", ctx), observe("child", child), observe("later", later),
				fmt.Sprintf("value %v", ctx.Value(key{})))
		}},
		{"cancelled first", func(with withDeadline) []string {
			ctx, cancel := with(context.Background(), time.Now().Add(time.Hour))
			child, stop := context.WithCancel(ctx)
			defer stop()
			called := make(chan struct{})
			context.AfterFunc(ctx, func() { close(called) })
			cancel()
			<-called
			<-child.Done()
			cancel()
			return []string{observe("ctx", ctx), observe("child", child)}
		}},
		{"the parent ends first, with a cause", func(with withDeadline) []string {
			parent, stopParent := context.WithCancelCause(context.Background())
			ctx, cancel := with(parent, time.Now().Add(time.Hour))
			defer cancel()
			child, stop := context.WithCancel(ctx)
			defer stop()
			stopParent(errStop)
			<-ctx.Done()
			<-child.Done()
			return []string{observe("ctx", ctx), observe("child", child)}
		}},
		{"the parent has ended already", func(with withDeadline) []string {
			// The parent tells the new context on a goroutine of its own,
			// which may run before the constructor returns.
			parent, stopParent := context.WithCancelCause(context.Background())
			stopParent(errStop)
			ctx, cancel := with(parent, time.Now().Add(time.Hour))
			defer cancel()
			<-ctx.Done()
			return []string{observe("ctx", ctx)}
		}},
		{"the parent's deadline is earlier", func(with withDeadline) []string {
			at := time.Now().Add(d)
			parent, stopParent := context.WithDeadline(context.Background(), at)
			defer stopParent()
			ctx, cancel := with(parent, at.Add(time.Hour))
			defer cancel()
			dl, _ := ctx.Deadline()
			<-ctx.Done()
			return []string{fmt.Sprintf("deadline is the parent's: %v", dl.Equal(at)), observe("ctx", ctx)}
		}},
		{"the deadline is past", func(with withDeadline) []string {
			ctx, cancel := with(context.Background(), time.Now().Add(-time.Second))
			defer cancel()
			return []string{observe("ctx", ctx)}
		}},
		{"an AfterFunc stopped in time", func(with withDeadline) []string {
			ctx, cancel := with(context.Background(), time.Now().Add(d))
			defer cancel()
			stop := context.AfterFunc(ctx, func() { panic("called after stop") })
			stopped := stop()
			<-ctx.Done()
			return []string{fmt.Sprintf("stopped %v, again %v", stopped, stop()), observe("ctx", ctx)}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, impl := range impls {
				got[impl.name] = strings.Join(tc.run(impl.with), "\n  ")
			}
			if got["context"] != got["deadline"] {
				t.Fatalf("context.WithDeadline:\n  %s\ndeadline.WithDeadline:\n  %s", got["context"], got["deadline"])
			}
			t.Logf("both:\n  %s", got["deadline"])
		})
	}
}

func observe(what string, ctx context.Context) string {
	done := "open"
	select {
	case <-ctx.Done():
		done = "closed"
	default:
	}
	return fmt.Sprintf("%s: done %s, err %v, cause %v", what, done, ctx.Err(), context.Cause(ctx))
}

// Many contexts with deadlines in any order, some released early: each
// ends at its deadline or when released, never before its deadline, with
// the matching error.
func TestManyDeadlines(t *testing.T) {
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		at := time.Now().Add(5*time.Millisecond + time.Duration((i*7919)%n)*100*time.Microsecond)
		ctx, cancel := deadline.WithDeadline(context.Background(), at)
		if i%3 == 0 {
			cancel()
			if !errors.Is(ctx.Err(), context.Canceled) {
				errs <- fmt.Errorf("%d: released, err %v", i, ctx.Err())
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			<-ctx.Done()
			if now := time.Now(); now.Before(at) {
				errs <- fmt.Errorf("%d: ended %v before its deadline", i, at.Sub(now))
			}
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				errs <- fmt.Errorf("%d: err %v", i, ctx.Err())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func BenchmarkWithTimeout(b *testing.B) {
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, cancel := impl.with(context.Background(), time.Now().Add(time.Second))
				cancel()
			}
		})
	}
}
