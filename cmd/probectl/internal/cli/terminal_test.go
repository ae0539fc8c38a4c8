package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// hostile is what a tenant's probe prints to take over an operator's
// terminal: OSC 52 (set the clipboard), a screen clear, a bell, DEL, and
// the C1 controls CSI and OSC as UTF-8.
const hostile = "pwned \x1b]52;c;ZWNobyBoaQ==\a\x1b[2J\x7f\u009b31m\u009d0;title\u009c\x08\r end"

// terminalSafe reports the first byte or rune of out a terminal would act
// on: C0 but newline and tab, DEL, C1, bytes that are not UTF-8.
func terminalSafe(out string) (bad string, ok bool) {
	for i, r := range out {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(out[i:], "\uFFFD"):
			return out[i : i+1], false
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return string(r), false
		}
	}
	return "", true
}

// No command writes a control character from a probe's output, an event
// message or a kill-guard reason to the terminal: each is shown escaped
// (\x1b), and JSON stays JSON carrying the very bytes.
func TestNoControlCharacterReachesTheTerminal(t *testing.T) {
	_, endpoint, status, _ := servertest.StartFixture(t)
	cs := servertest.Statuses()
	for i := range cs {
		if cs[i].ContainerID != servertest.WebAppID {
			continue
		}
		ready := cs[i].Probes[probespec.Readiness]
		ready.LastOutput = hostile
		for j := range ready.History {
			ready.History[j].Output, ready.History[j].Error = hostile, hostile
		}
		cs[i].Probes[probespec.Readiness] = ready
		live := cs[i].Probes[probespec.Liveness]
		live.Result, live.LastOutput, live.KillDeferred = results.Failure, hostile, hostile
		live.KillDeferredSince = live.LastProbeTime
		cs[i].Probes[probespec.Liveness] = live
		cs[i].SpecError = hostile
	}
	status.Set(cs...)
	status.PublishEvent(prober.Event{Time: servertest.Now, Type: "Warning", Reason: "Unhealthy", Message: "Readiness probe failed: " + hostile,
		PodUID: "uid-web", PodName: "web", PodNamespace: "default", ContainerName: "app", ContainerID: servertest.WebAppID, ProbeType: probespec.Readiness})
	servertest.WaitFor(t, "the hostile event in the server's log", func() bool {
		return strings.Contains(probectl(t, endpoint, "events", "-o", "json").out, "Readiness probe failed: pwned")
	})
	watched := func(t *testing.T, lines int, args ...string) result {
		subscribed := func() bool { n, _, _ := status.ResultStats(); return n == 1 }
		servertest.WaitFor(t, "the previous watch to end", func() bool { n, _, _ := status.ResultStats(); return n == 0 })
		return runStreaming(t, endpoint, subscribed, func() {
			status.PublishResult(prober.ResultChange{Time: servertest.Now, PodName: "web", PodNamespace: "default",
				ContainerName: "app", ContainerID: servertest.WebAppID, Type: probespec.Readiness, Result: results.Failure, Output: hostile})
		}, lines, args...)
	}
	tests := []struct {
		args  []string
		json  bool
		watch int // lines a watch prints
	}{
		{args: []string{"ps"}}, // no output column: nothing to show
		{args: []string{"ps", "-o", "wide", "--no-trunc"}},
		{args: []string{"ps", "-o", "json"}, json: true},
		{args: []string{"ps", "-o", "yaml"}},
		{args: []string{"why", "web/app"}},
		{args: []string{"why", "web/app", "-o", "json"}, json: true},
		{args: []string{"describe", "web/app"}},
		{args: []string{"describe", "web/app", "-o", "json"}, json: true},
		{args: []string{"describe", "web/app", "-o", "yaml"}},
		{args: []string{"events"}},
		{args: []string{"events", "-o", "json"}, json: true},
		{args: []string{"watch"}, watch: 2},
		{args: []string{"watch", "-o", "json"}, json: true, watch: 1},
	}
	for _, tt := range tests {
		name := strings.Join(tt.args, " ")
		t.Run(name, func(t *testing.T) {
			var r result
			if tt.watch > 0 {
				r = watched(t, tt.watch, tt.args...)
			} else {
				r = probectl(t, endpoint, tt.args...)
			}
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.errOut)
			}
			if bad, ok := terminalSafe(r.out + r.errOut); !ok {
				t.Fatalf("%q reached the terminal:\n%s", bad, r.out)
			}
			if tt.json {
				checkJSONCarries(t, r.out)
				return
			}
			if name != "ps" && !strings.Contains(r.out, `pwned \x1b]52;c;`) {
				t.Errorf("the escape is not shown escaped:\n%s", r.out)
			}
		})
	}
}

// checkJSONCarries checks that out is JSON (a document or one per line)
// and that some string in it is exactly the hostile output.
func checkJSONCarries(t *testing.T, out string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	found := false
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		found = found || containsString(v, hostile)
	}
	if !found {
		t.Errorf("the JSON does not carry the output as it was:\n%s", out)
	}
}

func containsString(v any, want string) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, want)
	case map[string]any:
		for _, e := range x {
			if containsString(e, want) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if containsString(e, want) {
				return true
			}
		}
	}
	return false
}
