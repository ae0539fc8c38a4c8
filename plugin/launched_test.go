package plugin_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/plugin"
)

// launchedEnv makes this process look like a plugin the runtime launched:
// a connected socket in NRI_PLUGIN_SOCKET, index and name in the
// environment (what deploy/nriinstall's launch test recorded).
func launchedEnv(t *testing.T, rt *fakeRuntime) {
	t.Helper()
	conn, err := net.Dial("unix", rt.socket)
	if err != nil {
		t.Fatal(err)
	}
	f, err := conn.(*net.UnixConn).File()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Dup(int(f.Fd()))
	f.Close()
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("NRI_PLUGIN_SOCKET", strconv.Itoa(fd))
	t.Setenv("NRI_PLUGIN_IDX", "05")
	t.Setenv("NRI_PLUGIN_NAME", "probelet-test")
}

func TestLaunchedPluginServesItsOneConnection(t *testing.T) {
	rt := newFakeRuntime(t)
	launchedEnv(t, rt)
	if !plugin.Launched() {
		t.Fatal("Launched() = false with NRI_PLUGIN_SOCKET set")
	}
	sink := newRecordingSink()
	cache, err := lifecycle.New(sink)
	if err != nil {
		t.Fatal(err)
	}
	configured := make(chan string, 1)
	core, logs := observer.New(zap.InfoLevel)
	// WithIndex is ignored: the runtime chose the index.
	p, err := plugin.New(cache, plugin.WithIndex("42"), plugin.WithSocketPath("/nonexistent"), plugin.WithLogger(zap.New(core)),
		plugin.WithConfigHandler(func(c string) error { configured <- c; return nil }))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(context.Background()) }()
	select {
	case <-configured:
	case err := <-done:
		t.Fatalf("Run = %v before Configure", err)
	case <-time.After(10 * time.Second):
		t.Fatal("never configured")
	}
	testutil.WaitFor(t, "Synchronize", func() bool { return sink.syncCount() >= 1 })
	if err := rt.runPod(pod("sb1", "uid1", "")); err != nil {
		t.Fatal(err)
	}
	if _, ok := sink.pod("uid1"); !ok {
		t.Error("event on the inherited connection did not reach the engine")
	}
	reg := logs.FilterMessage("Registered with the runtime over NRI").All()
	if len(reg) != 1 || reg[0].ContextMap()["plugin"] != "05-probelet-test" ||
		reg[0].ContextMap()["socket"] != "inherited fd "+os.Getenv("NRI_PLUGIN_SOCKET") {
		t.Errorf("registration logged as %+v, want the runtime's 05-probelet-test on the inherited fd", reg)
	}

	rt.stop() // the runtime exits; it relaunches its plugins when it starts
	select {
	case err := <-done:
		if !errors.Is(err, plugin.ErrConnectionClosed) {
			t.Fatalf("Run = %v, want ErrConnectionClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run went on after the runtime closed the connection")
	}
}

func TestLaunchedPluginRejectsBadConfiguration(t *testing.T) {
	rt := newFakeRuntime(t)
	launchedEnv(t, rt)
	p, err := plugin.New(panickyCache{}, plugin.WithConfigHandler(func(string) error {
		return errors.New("--tcp-mode: \"x\" is not one of auto, ebpf, dial")
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err == nil || p.Connected() {
		t.Fatalf("Run = %v, connected %v; want the registration refused", err, p.Connected())
	}
}

// TestConfiguredLoggerTakesOver: a launched plugin starts logging before
// the runtime's configuration says how; the logger its config handler sets
// logs everything after, the NRI stub's own messages included.
func TestConfiguredLoggerTakesOver(t *testing.T) {
	rt := newFakeRuntime(t)
	launchedEnv(t, rt)
	preCore, pre := observer.New(zap.DebugLevel)
	postCore, post := observer.New(zap.DebugLevel)
	var p *plugin.Plugin
	p, err := plugin.New(panickyCache{}, plugin.WithLogger(zap.New(preCore)), plugin.WithConfigHandler(func(string) error {
		p.SetLogger(zap.New(postCore))
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	testutil.WaitFor(t, "the registration", p.Connected)
	// Connected may turn true a moment before the line is logged.
	testutil.WaitFor(t, "the registration line", func() bool {
		return post.FilterMessage("Registered with the runtime over NRI").Len()+pre.FilterMessage("Registered with the runtime over NRI").Len() > 0
	})
	if n := post.FilterMessage("Registered with the runtime over NRI").Len(); n != 1 {
		t.Errorf("the configured logger has %d registration lines, want 1", n)
	}
	if n := pre.FilterMessage("Registered with the runtime over NRI").Len(); n != 0 {
		t.Errorf("the logger from before the configuration has %d registration lines, want 0", n)
	}
	if pre.FilterMessageSnippet("Configuring plugin").Len() != 1 || post.FilterMessageSnippet("Subscribing plugin").Len() != 1 {
		t.Errorf("the stub's messages: before %v, after %v; want its Configure narrated by the first, then the second",
			pre.All(), post.All())
	}
}
