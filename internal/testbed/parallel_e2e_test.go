//go:build e2e

package testbed_test

import (
	"net"
	"sync"
	"testing"

	"github.com/probelet/probelet/internal/testbed"
)

// TestBedsRunSideBySide starts two beds at once: each gets its own bridge
// and subnet, and each serves its own pod.
func TestBedsRunSideBySide(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // bridge or /24 → bed dir
	claim := func(t *testing.T, key, dir string) {
		mu.Lock()
		defer mu.Unlock()
		if other, ok := seen[key]; ok {
			t.Errorf("%s used by both %s and %s", key, other, dir)
		}
		seen[key] = dir
	}
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			bed := testbed.Start(t)
			podID, _ := runWeb(t, bed)
			ip, err := bed.PodIP(podID)
			if err != nil {
				t.Fatal(err)
			}
			if got := httpGet(t, ip); got != indexHTML {
				t.Errorf("GET %s = %q", ip, got)
			}
			claim(t, bed.Bridge(), bed.Dir())
			claim(t, net.ParseIP(ip).Mask(net.CIDRMask(24, 32)).String(), bed.Dir())
		})
	}
}
