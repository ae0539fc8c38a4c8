package tracker

// Regenerate with hack/gen-ebpf.sh (make generate), which pins the compiler.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -target amd64,arm64 -type event -type port_key -type port_val tracker bpf/tracker.c -- -I./bpf
