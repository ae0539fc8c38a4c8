// Package lsmtest holds directexec's tests that need a kernel with an
// enforcing Linux security module: the test VM (hack/vm, `make vm`) builds
// them with the vm tag and runs them under Debian 12's Linux 6.1, where
// AppArmor is on. The host's kernel has none, so `go test ./...` has
// nothing to run here.
package lsmtest
