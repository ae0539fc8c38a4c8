package netns_test

import (
	"errors"
	"testing"

	"github.com/probelet/probelet/ebpf/ebpftest"
	"github.com/probelet/probelet/ebpf/netns"
)

func TestDoRunsInsideAndReturns(t *testing.T) {
	ebpftest.RequireRoot(t)
	ns, err := ebpftest.NewNetNS(0)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	want, err := netns.Inode(ns.Path)
	if err != nil {
		t.Fatal(err)
	}
	home, err := netns.Inode("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if want == home {
		t.Fatal("new namespace has the test's inode")
	}
	var inside uint32
	sentinel := errors.New("from fn")
	err = netns.Do(ns.Path, func() error {
		inside, err = netns.Inode("/proc/thread-self/ns/net")
		if err != nil {
			return err
		}
		return sentinel
	})
	if !errors.Is(err, sentinel) {
		t.Fatalf("Do returned %v, want fn's error", err)
	}
	if inside != want {
		t.Errorf("inside Do: netns %d, want %d", inside, want)
	}
	if after, _ := netns.Inode("/proc/thread-self/ns/net"); after != home {
		t.Errorf("after Do: netns %d, want %d", after, home)
	}
}

func TestMissingPath(t *testing.T) {
	if _, err := netns.Inode("/nonexistent/ns/net"); err == nil {
		t.Error("Inode of a missing path succeeded")
	}
	if err := netns.Do("/nonexistent/ns/net", func() error { return nil }); err == nil {
		t.Error("Do on a missing path succeeded")
	}
}
