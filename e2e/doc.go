// Package e2e is probelet's end-to-end suite: the real probelet and
// probectl binaries against a real containerd, runc, CNI and crictl test
// bed (internal/testbed), one bed and one probelet per test.
//
// The tests carry the build tag e2e and need root:
//
//	go test -tags e2e -count=1 ./e2e/
//
// Without root they skip, unless CI or PROBELET_E2E=1 is set: then they
// fail. hack/e2e.sh (make e2e) applies the same policy. The package itself
// holds no code; everything lives in its e2e_test files.
package e2e
