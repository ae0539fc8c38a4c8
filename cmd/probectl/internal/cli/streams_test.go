package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// runStreaming starts a streaming command, lets publish feed it once the
// server has subscribed, waits for want lines of output, interrupts it and
// returns what it printed.
func runStreaming(t *testing.T, endpoint string, subscribed func() bool, publish func(), wantLines int, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan result, 1)
	go func() { done <- probectlCtx(ctx, endpoint, out, args...) }()
	servertest.WaitFor(t, "the command's subscription", subscribed)
	publish()
	servertest.WaitFor(t, "the command's output", func() bool { return strings.Count(out.String(), "\n") >= wantLines })
	cancel() // Ctrl-C
	return <-done
}

func TestWatch(t *testing.T) {
	_, endpoint, src, _ := servertest.StartFixture(t)
	subscribed := func() bool { n, _, _ := src.ResultStats(); return n == 1 }
	publish := func() {
		src.PublishResult(prober.ResultChange{Time: servertest.Now, PodName: "dns", PodNamespace: "kube-system",
			ContainerName: "coredns", ContainerID: servertest.DNSCoreID, Type: probespec.Liveness, Result: results.Failure,
			Output: "HTTP probe failed with statuscode: 500"})
		src.PublishResult(prober.ResultChange{Time: servertest.Now, PodName: "web", PodNamespace: "default",
			ContainerName: "app", ContainerID: servertest.WebAppID, Type: probespec.Readiness, Result: results.Success})
	}
	for _, tt := range []struct {
		golden string
		args   []string
		lines  int
	}{
		{"watch.txt", []string{"watch"}, 3},
		{"watch_filtered.json", []string{"watch", "web/app", "-o", "json"}, 1},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			servertest.WaitFor(t, "the previous watch to end", func() bool { n, _, _ := src.ResultStats(); return n == 0 })
			r := runStreaming(t, endpoint, subscribed, publish, tt.lines, tt.args...)
			if r.code != 0 || r.errOut != "" {
				t.Fatalf("interrupted watch: exit %d, stderr %q", r.code, r.errOut)
			}
			servertest.Golden(t, tt.golden, []byte(r.out))
		})
	}
}

func TestEventsFollow(t *testing.T) {
	_, endpoint, src, _ := servertest.StartFixture(t)
	// The server's event log holds one subscription; a follower adds none
	// upstream, so wait for the follower through the retained events instead.
	r := runStreaming(t, endpoint, func() bool { return true }, func() {}, 4, "events", "-f")
	if r.code != 0 || !strings.Contains(r.out, "Killing") {
		t.Fatalf("events -f: exit %d, out %q, err %q", r.code, r.out, r.errOut)
	}
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- probectlCtx(ctx, endpoint, out, "events", "web/app", "-f", "-o", "json") }()
	servertest.WaitFor(t, "the retained event", func() bool { return strings.Count(out.String(), "\n") == 1 })
	src.PublishEvent(prober.Event{Time: servertest.Now, Type: "Warning", Reason: "ProbeWarning", Message: "Readiness probe warning: redirect",
		PodName: "web", PodNamespace: "default", ContainerName: "app", ContainerID: servertest.WebAppID, ProbeType: probespec.Readiness})
	servertest.WaitFor(t, "the new event", func() bool { return strings.Count(out.String(), "\n") == 2 })
	cancel()
	if r := <-done; r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	servertest.Golden(t, "events_follow.json", []byte(out.String()))
}

// A server that gives up on the watch (slow reader) is an error, not a
// normal end.
func TestWatchServerGoesAway(t *testing.T) {
	srv, endpoint, src, _ := servertest.StartFixture(t)
	done := make(chan result, 1)
	go func() { done <- probectlCtx(context.Background(), endpoint, nil, "watch") }()
	servertest.WaitFor(t, "the watch subscription", func() bool { n, _, _ := src.ResultStats(); return n == 1 })
	srv.Stop()
	r := <-done
	if r.code != 1 || !strings.Contains(r.errOut, "shutting down") {
		t.Fatalf("exit %d, stderr %q; want exit 1 saying probelet is shutting down", r.code, r.errOut)
	}
}

func TestCompletion(t *testing.T) {
	_, endpoint, _, _ := servertest.StartFixture(t)
	r := probectl(t, endpoint, "__complete", "describe", "")
	for _, want := range []string{"default/web/app", "kube-system/dns/coredns", ":4"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("completion %q lacks %q", r.out, want)
		}
	}
	r = probectl(t, endpoint, "completion", "bash")
	if r.code != 0 || !strings.Contains(r.out, "__start_probectl") {
		t.Fatalf("completion bash: exit %d, %d bytes", r.code, len(r.out))
	}
}
