package history_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/history"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/probespec"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func restart(id string) prober.Restart {
	return prober.Restart{Time: t0, ContainerID: id, ProbeType: probespec.Liveness, GracePeriod: 30 * time.Second,
		Message: "Container app failed liveness probe, will be restarted"}
}

// run feeds the log from a fake engine until the returned stop, which
// flushes and waits (once; later calls return at once).
func run(t *testing.T, l *history.Log) (*servertest.Status, func()) {
	t.Helper()
	status := servertest.NewStatus()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, status) }()
	testutil.WaitFor(t, "the history's subscription", func() bool { n, _, _ := status.EventStats(); return n == 1 })
	var once sync.Once
	return status, func() { once.Do(func() { cancel(); <-done }) }
}

func TestHistorySurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	l, err := history.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	status, stop := run(t, l)
	l.Save("uid-1", map[string][]prober.Restart{"app": {restart("c1")}})
	status.PublishEvent(prober.Event{Time: t0, Type: "Normal", Reason: "Killing", PodUID: "uid-1", ContainerName: "app"})
	testutil.WaitFor(t, "the event kept", func() bool { return len(l.Events()) == 1 })
	stop()

	again, err := history.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if evs := again.Events(); len(evs) != 1 || evs[0].Reason != "Killing" || !evs[0].Time.Equal(t0) {
		t.Fatalf("events after reopening = %+v", evs)
	}
	if rs := again.Restarts("uid-1")["app"]; len(rs) != 1 || rs[0] != restart("c1") {
		t.Fatalf("restarts after reopening = %+v", rs)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("state directory holds %d files, want only %s (no temporary files left)", len(entries), history.FileName)
	}
}

func TestUnreadableFilesAreSetAside(t *testing.T) {
	for name, tc := range map[string]struct {
		content string
		aside   string // the set-aside file's suffix
		problem string // in the warning
	}{
		"corrupt": {content: `{"format": "probelet.io/history/v1", "events": [`, aside: "corrupt", problem: "unexpected end"},
		"foreign": {content: `{"kind": "Something", "apiVersion": "v1"}`, aside: "corrupt", problem: "not a probelet history"},
		"empty":   {content: ``, aside: "corrupt", problem: "unexpected end"},
		"a corrupt line in the journal": {content: `{"format":"probelet.io/history/v2","events":[],"restarts":{}}` + "\n" +
			`not json` + "\n" + `{"event":{"Reason":"b"}}` + "\n", aside: "corrupt", problem: "line 2"},
		"a journal line of neither kind": {content: `{"format":"probelet.io/history/v2","events":[],"restarts":{}}` + "\n" + `{}` + "\n",
			aside: "corrupt", problem: "neither an event nor restarts"},
		// A rollback below a release that changed the format.
		"a newer release's format": {content: `{"format":"probelet.io/history/v3","events":[{"Reason":"a"}],"restarts":{}}` + "\n",
			aside: "newer", problem: "written by a newer probelet (probelet.io/history/v3; this one reads probelet.io/history/v2 and probelet.io/history/v1)"},
	} {
		content := tc.content
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, history.FileName)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zap.WarnLevel)
			l, err := history.Open(dir, history.WithLogger(zap.New(core)))
			if err != nil {
				t.Fatalf("Open refused to start: %v", err)
			}
			if len(l.Events()) != 0 || logs.FilterMessageSnippet("set aside").Len() != 1 {
				t.Fatalf("events %v, warnings %v; want an empty history and one warning", l.Events(), logs.All())
			}
			if problem, _ := logs.All()[0].ContextMap()["problem"].(string); !strings.Contains(problem, tc.problem) {
				t.Errorf("the warning's problem is %q, want it to say %q", problem, tc.problem)
			}
			matches, _ := filepath.Glob(path + "." + tc.aside + "-*")
			if len(matches) != 1 {
				t.Fatalf("set-aside files = %v", matches)
			}
			if kept, _ := os.ReadFile(matches[0]); string(kept) != content {
				t.Fatalf("the set-aside file changed: %q", kept)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("the unreadable file is still read next time: %v", err)
			}
		})
	}
}

func TestBounds(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	l, err := history.Open(t.TempDir(), history.WithBounds(3, 2), history.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	status, stop := run(t, l)
	defer stop()
	for i := range 5 {
		status.PublishEvent(prober.Event{Reason: string(rune('a' + i))})
	}
	testutil.WaitFor(t, "the newest three events", func() bool {
		evs := l.Events()
		return len(evs) == 3 && evs[0].Reason == "c" && evs[2].Reason == "e"
	})
	for _, uid := range []string{"u1", "u2", "u3"} { // u1 is the oldest
		l.Save(uid, map[string][]prober.Restart{"app": {restart(uid)}})
		clk.Step(time.Second)
	}
	if l.Restarts("u1") != nil || l.Restarts("u2") == nil || l.Restarts("u3") == nil {
		t.Fatal("the oldest pod's restarts were not the ones dropped")
	}
}

func TestAnUnusableDirectoryIsAnError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := history.Open(filepath.Join(file, "state")); err == nil || !strings.Contains(err.Error(), "state directory") {
		t.Fatalf("Open under a file = %v, want a state directory error", err)
	}
}

// lines reads the history file's lines; none before it is written.
func lines(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, history.FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// The file is a snapshot and then one line per event: a busy node writes
// each event once, not the whole history every second, and the file stays
// bounded: once as many lines were appended as events are kept, it is
// compacted into a snapshot again.
func TestEventsAreAppendedAndTheFileCompacted(t *testing.T) {
	dir := t.TempDir()
	clk := clocktesting.NewFakeClock(t0)
	l, err := history.Open(dir, history.WithBounds(3, 2), history.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	status, stop := run(t, l)
	defer stop()
	// Each event in a flush of its own; the first flush writes the
	// snapshot (the journal is opened by one).
	want := []int{1, 2, 3, 4, 1, 2, 3, 4, 1}
	for i, n := range want {
		status.PublishEvent(prober.Event{Reason: fmt.Sprint(i)})
		testutil.WaitFor(t, "the event kept", func() bool { evs := l.Events(); return len(evs) > 0 && evs[len(evs)-1].Reason == fmt.Sprint(i) })
		clk.Step(time.Second)
		testutil.WaitFor(t, fmt.Sprintf("%d lines after event %d", n, i), func() bool { return len(lines(t, dir)) == n })
	}
	stop()
	again, err := history.Open(dir, history.WithBounds(3, 2))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range again.Events() {
		got = append(got, ev.Reason)
	}
	if !slices.Equal(got, []string{"6", "7", "8"}) {
		t.Fatalf("events after reopening = %v, want the newest three", got)
	}
}

// What a file holds when probelet opens it, and what it reads from it.
func TestOpenReadsSnapshotAndJournal(t *testing.T) {
	snap := func(reasons ...string) string {
		var evs []string
		for _, r := range reasons {
			evs = append(evs, `{"Reason":"`+r+`"}`)
		}
		return `{"format":"probelet.io/history/v2","events":[` + strings.Join(evs, ",") + `],"restarts":{}}`
	}
	event := func(r string) string { return `{"event":{"Reason":"` + r + `"}}` }
	restarts := `{"restarts":{"pod":"uid-1","updated":"2026-05-01T12:00:00Z","byContainer":{"app":[{"ContainerID":"c1"}]}}}`
	for _, tc := range []struct {
		name, content string
		events        []string
		restarted     bool
	}{
		{"snapshot", snap("a", "b") + "\n", []string{"a", "b"}, false},
		{"snapshot and journal", snap("a") + "\n" + event("b") + "\n" + restarts + "\n" + event("c") + "\n", []string{"a", "b", "c"}, true},
		{"journal over the bound", snap("a", "b", "c") + "\n" + event("d") + "\n" + event("e") + "\n", []string{"c", "d", "e"}, false},
		{"a line torn by a crash", snap("a") + "\n" + event("b") + "\n" + `{"event":{"Rea`, []string{"a", "b"}, false},
		{"a whole last line without its newline", snap("a") + "\n" + event("b"), []string{"a", "b"}, false},
		{"v1", `{"format":"probelet.io/history/v1","events":[{"Reason":"a"}],"restarts":{"uid-1":{"updated":"2026-05-01T12:00:00Z","byContainer":{"app":[{"ContainerID":"c1"}]}}}}`, []string{"a"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, history.FileName), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zap.WarnLevel)
			l, err := history.Open(dir, history.WithBounds(3, 2), history.WithLogger(zap.New(core)))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ev := range l.Events() {
				got = append(got, ev.Reason)
			}
			if !slices.Equal(got, tc.events) || (l.Restarts("uid-1") != nil) != tc.restarted || logs.Len() != 0 {
				t.Fatalf("events %v, restarts %v, warnings %v; want events %v, restarts %v, no warning", got, l.Restarts("uid-1"), logs.All(), tc.events, tc.restarted)
			}
			// Whatever was read, the next write is a v2 snapshot of it.
			_, stop := run(t, l)
			l.Save("uid-2", map[string][]prober.Restart{"app": {restart("c2")}})
			stop()
			first := lines(t, dir)[0]
			if !strings.Contains(first, `"format":"probelet.io/history/v2"`) {
				t.Fatalf("first line after a write = %s, want a v2 snapshot", first)
			}
		})
	}
}

func TestOpenRefusesBadOptions(t *testing.T) {
	for name, o := range map[string]history.Option{
		"nil clock": history.WithClock(nil), "nil logger": history.WithLogger(nil),
		"no events": history.WithBounds(0, 2), "no pods": history.WithBounds(3, -1),
	} {
		if _, err := history.Open(t.TempDir(), o); err == nil {
			t.Errorf("%s: Open succeeded", name)
		}
	}
}
