package plugin_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	nri "github.com/containerd/nri/pkg/adaptation"
	nrilog "github.com/containerd/nri/pkg/log"

	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
)

// TestMain quiets the in-process NRI runtime, which logs through logrus.
func TestMain(m *testing.M) {
	nrilog.Set(quiet{})
	os.Exit(m.Run())
}

type quiet struct{}

func (quiet) Debugf(context.Context, string, ...any) {}
func (quiet) Infof(context.Context, string, ...any)  {}
func (quiet) Warnf(context.Context, string, ...any)  {}
func (quiet) Errorf(context.Context, string, ...any) {}

// fakeRuntime is the runtime side of NRI (what containerd embeds), run
// in-process from github.com/containerd/nri/pkg/adaptation. It keeps the
// pods and live containers it announced so that Synchronize after a
// (re)connect tells the truth.
//
// Adaptation.Stop does not close the connections of external plugins (a
// real runtime closes them by exiting), so the plugin reaches the
// adaptation through a proxy that stop tears down.
type fakeRuntime struct {
	t      *testing.T
	dir    string
	socket string
	mu     sync.Mutex
	pods   map[string]*nri.PodSandbox
	ctrs   map[string]*nri.Container
	nri    *nri.Adaptation
	proxy  *proxy
}

func newFakeRuntime(t *testing.T) *fakeRuntime {
	t.Helper()
	// unix socket paths are short: keep the directory directly under /tmp.
	dir, err := os.MkdirTemp("/tmp", "nri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &fakeRuntime{t: t, dir: dir, socket: filepath.Join(dir, "nri.sock"),
		pods: map[string]*nri.PodSandbox{}, ctrs: map[string]*nri.Container{}}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *fakeRuntime) start() {
	r.t.Helper()
	inner := filepath.Join(r.dir, "inner.sock")
	a, err := nri.New("fake-containerd", "v2.4.2", r.synchronize, r.update,
		nri.WithSocketPath(inner),
		nri.WithPluginPath(filepath.Join(r.dir, "plugins")),
		nri.WithPluginConfigPath(filepath.Join(r.dir, "conf.d")))
	if err != nil {
		r.t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		r.t.Fatal(err)
	}
	px, err := startProxy(r.socket, inner)
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.nri, r.proxy = a, px
	r.mu.Unlock()
}

// stop is a runtime going down: the plugin's connection drops.
func (r *fakeRuntime) stop() {
	r.mu.Lock()
	a, px := r.nri, r.proxy
	r.nri, r.proxy = nil, nil
	r.mu.Unlock()
	if px != nil {
		px.close()
	}
	if a != nil {
		a.Stop()
	}
}

// proxy splices unix connections from front to back until closed.
type proxy struct {
	l     net.Listener
	back  string
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startProxy(front, back string) (*proxy, error) {
	os.Remove(front)
	l, err := net.Listen("unix", front)
	if err != nil {
		return nil, err
	}
	p := &proxy{l: l, back: back}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("unix", p.back)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, b)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, b)
		go p.pipe(b, c)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

func (p *proxy) close() {
	p.l.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (r *fakeRuntime) synchronize(ctx context.Context, cb nri.SyncCB) error {
	r.mu.Lock()
	var pods []*nri.PodSandbox
	var ctrs []*nri.Container
	for _, p := range r.pods {
		pods = append(pods, p)
	}
	for _, c := range r.ctrs {
		ctrs = append(ctrs, c)
	}
	r.mu.Unlock()
	sort.Slice(pods, func(i, j int) bool { return pods[i].Id < pods[j].Id })
	sort.Slice(ctrs, func(i, j int) bool { return ctrs[i].Id < ctrs[j].Id })
	_, err := cb(ctx, pods, ctrs)
	return err
}

func (r *fakeRuntime) update(context.Context, []*nri.ContainerUpdate) ([]*nri.ContainerUpdate, error) {
	return nil, nil
}

// do runs one runtime operation the way containerd does: never while a
// plugin is being synchronized.
func (r *fakeRuntime) do(op func(ctx context.Context, a *nri.Adaptation) error) error {
	r.mu.Lock()
	a := r.nri
	r.mu.Unlock()
	b := a.BlockPluginSync()
	defer b.Unblock()
	return op(context.Background(), a)
}

func (r *fakeRuntime) runPod(p *nri.PodSandbox) error {
	r.mu.Lock()
	r.pods[p.Id] = p
	r.mu.Unlock()
	return r.do(func(ctx context.Context, a *nri.Adaptation) error {
		return a.RunPodSandbox(ctx, &nri.RunPodSandboxRequest{Pod: p})
	})
}

// startContainer walks a container through create, post-create, start and
// post-start, as containerd announces a container start.
func (r *fakeRuntime) startContainer(p *nri.PodSandbox, c *nri.Container) error {
	c.State = nri.ContainerState_CONTAINER_CREATED
	r.mu.Lock()
	r.ctrs[c.Id] = c
	r.mu.Unlock()
	return r.do(func(ctx context.Context, a *nri.Adaptation) error {
		if _, err := a.CreateContainer(ctx, &nri.CreateContainerRequest{Pod: p, Container: c}); err != nil {
			return err
		}
		if err := a.PostCreateContainer(ctx, &nri.PostCreateContainerRequest{Pod: p, Container: c}); err != nil {
			return err
		}
		c.Pid = 4242
		if err := a.StartContainer(ctx, &nri.StartContainerRequest{Pod: p, Container: c}); err != nil {
			return err
		}
		c.State, c.StartedAt = nri.ContainerState_CONTAINER_RUNNING, time.Now().UnixNano()
		return a.PostStartContainer(ctx, &nri.PostStartContainerRequest{Pod: p, Container: c})
	})
}

func (r *fakeRuntime) stopContainer(p *nri.PodSandbox, c *nri.Container, exit int32) error {
	c.State, c.ExitCode, c.FinishedAt, c.Pid = nri.ContainerState_CONTAINER_STOPPED, exit, time.Now().UnixNano(), 0
	r.mu.Lock()
	delete(r.ctrs, c.Id) // NRI never lists exited containers
	r.mu.Unlock()
	return r.do(func(ctx context.Context, a *nri.Adaptation) error {
		_, err := a.StopContainer(ctx, &nri.StopContainerRequest{Pod: p, Container: c})
		return err
	})
}

func (r *fakeRuntime) removeContainer(p *nri.PodSandbox, c *nri.Container) error {
	return r.do(func(ctx context.Context, a *nri.Adaptation) error {
		return a.RemoveContainer(ctx, &nri.RemoveContainerRequest{Pod: p, Container: c})
	})
}

func (r *fakeRuntime) stopPod(p *nri.PodSandbox) error {
	return r.do(func(ctx context.Context, a *nri.Adaptation) error {
		return a.StopPodSandbox(ctx, &nri.StopPodSandboxRequest{Pod: p})
	})
}

func (r *fakeRuntime) removePod(p *nri.PodSandbox) error {
	r.mu.Lock()
	delete(r.pods, p.Id)
	r.mu.Unlock()
	return r.do(func(ctx context.Context, a *nri.Adaptation) error {
		return a.RemovePodSandbox(ctx, &nri.RemovePodSandboxRequest{Pod: p})
	})
}

func pod(id, uid, annotation string) *nri.PodSandbox {
	p := &nri.PodSandbox{Id: id, Uid: uid, Name: "web-" + uid, Namespace: "default",
		Ips: []string{"10.88.0.5"}, Pid: 77,
		Linux:  &nri.LinuxPodSandbox{Namespaces: []*nri.LinuxNamespace{{Type: "network", Path: "/run/netns/cni-1"}}},
		Labels: map[string]string{"app": "web"}, Annotations: map[string]string{}}
	if annotation != "" {
		p.Annotations["probelet.io/probes"] = annotation
	}
	return p
}

func container(id, podID, name string) *nri.Container {
	return &nri.Container{Id: id, PodSandboxId: podID, Name: name, CreatedAt: time.Now().UnixNano(),
		Env: []string{"PORT=8080"}, Image: &nri.Image{Name: "busybox:latest"},
		Annotations: map[string]string{"io.kubernetes.container.ports": `[{"name":"http","containerPort":8080,"protocol":"TCP"}]`}}
}

// recordingSink is the engine as the cache drives it.
type recordingSink struct {
	mu    sync.Mutex
	pods  map[string]node.Pod
	syncs int
	calls int
}

var _ lifecycle.Sink = (*recordingSink)(nil)

func newRecordingSink() *recordingSink { return &recordingSink{pods: map[string]node.Pod{}} }

func (s *recordingSink) UpdatePod(p node.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.pods[p.UID] = p
}

func (s *recordingSink) RemovePod(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	delete(s.pods, uid)
}

func (s *recordingSink) SyncPods(ps []node.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.syncs++
	s.pods = map[string]node.Pod{}
	for _, p := range ps {
		s.pods[p.UID] = p
	}
}

func (s *recordingSink) pod(uid string) (node.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[uid]
	return p, ok
}

func (s *recordingSink) syncCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.syncs
}

// containerStates maps container ID to state for one pod in the sink.
func (s *recordingSink) containerStates(uid string) map[string]node.ContainerState {
	p, _ := s.pod(uid)
	out := map[string]node.ContainerState{}
	for _, c := range p.Containers {
		out[c.ID] = c.State
	}
	return out
}
