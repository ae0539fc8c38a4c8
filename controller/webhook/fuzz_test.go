package webhook_test

import (
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/probelet/probelet/controller/webhook"
)

// FuzzMutate: a pod author writes the pod the webhook reads. Whatever the
// bytes, Mutate returns (no panic, no hang), and a patch it returns
// applies to them and leaves a pod it would not change again.
func FuzzMutate(f *testing.F) {
	for _, name := range []string{"web.json", "merged.json", "merged-defaulted.json", "foreign-host.json", "plain-init.json", "invalid.json", "no-probes.json"} {
		data, err := readFixture(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := webhook.Mutate(raw)
		if err != nil || d.Patch == nil {
			return
		}
		p, err := jsonpatch.DecodePatch(d.Patch)
		if err != nil {
			t.Fatalf("patch %s: %v", d.Patch, err)
		}
		out, err := p.Apply(raw)
		if err != nil {
			t.Fatalf("patch %s does not apply to %q: %v", d.Patch, raw, err)
		}
		again, err := webhook.Mutate(out)
		if err != nil || again.Patch != nil {
			t.Fatalf("the patched pod %q would be changed again: %s (%v)", out, again.Patch, err)
		}
	})
}
