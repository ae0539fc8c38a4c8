// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore

// tracker.c keeps user space informed of every TCP listening socket on the
// node: it reports sockets entering and leaving LISTEN, finishes entries for
// listen() without bind() once the port is known, snapshots listeners that
// existed before loading, and flags listeners whose accept queue overflows.
//
// It loads on Linux 5.10 and later with BTF: every kernel field is read with
// CO-RE. Where a newer kernel offers something better, user space probes for
// it and sets one of the have_* constants below before loading; the verifier
// then drops the branch the running kernel cannot take (a frozen read-only
// map is a known constant to it), so each capability has one switch and a
// kernel runs only its own path. kernels_test.go checks every helper,
// map type and program type here against the first kernel that has it.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

char __license[] SEC("license") = "Dual BSD/GPL";

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define IPPROTO_MPTCP 262
#define TCP_ESTABLISHED 1
#define TCP_SYN_RECV 3
#define TCP_CLOSE 7
#define TCP_LISTEN 10
#define SOCKFS_MAGIC 0x534F434B

// have_sock_from_file: bpf_sock_from_file is callable (Linux 5.11). Without
// it the snapshot reads sockfs files' private data.
const volatile bool have_sock_from_file = false;
// have_tracing_cookie: tracing programs may call bpf_get_socket_cookie
// (Linux 5.12). Without it a listener's cookie is read where something
// already generated it, and user space learns it from sock_diag otherwise.
const volatile bool have_tracing_cookie = false;
// have_snapshot_cookie: the snapshot may give the listeners it finds their
// cookie too. That takes have_tracing_cookie and a verifier that trusts the
// socket reached through bpf_sock_from_file's result; Linux 6.18.44 types
// it untrusted and refuses the call. User space loads the snapshot program
// with this gate on to find out. Without it the snapshot reads the cookie
// where something already generated it, and sock_diag supplies the rest.
const volatile bool have_snapshot_cookie = false;

// MAX_PORT_LISTENERS bounds an SO_REUSEPORT group checked for a full queue.
#define MAX_PORT_LISTENERS 8

enum event_kind {
	EVENT_ADD = 1,    // a socket listens (port 0: listen() without bind())
	EVENT_REMOVE = 2, // a socket left LISTEN
	EVENT_FULL = 3,   // a listener's accept queue overflowed
	EVENT_MARKER = 4, // a sync barrier; sk carries the sequence number
};

enum counter {
	COUNTER_RINGBUF_DROPS = 0, // events lost: ring buffer full
	COUNTER_LIVE_FULL = 1,     // listeners not tracked: live map full
	COUNTER_MAX = 2,
};

// event is one ring buffer sample. Its layout is mirrored in Go (bpf2go
// -type event) and decoded with native endianness.
struct event {
	__u64 sk;
	__u64 cookie;
	__u32 netns;
	__s32 bound_dev_if;
	__u32 ack_backlog;
	__u32 max_ack_backlog;
	__u8 addr[16];
	__u16 port;
	__u16 family;
	__u8 kind;
	__u8 v6only;
	__u8 pad[2];
};

// port_key names a port in a network namespace; port_val holds the
// listeners on it (socket pointers), written by user space.
struct port_key {
	__u32 netns;
	__u16 port;
	__u16 pad;
};

struct port_val {
	__u64 sk[MAX_PORT_LISTENERS];
};

// Names struct event in BTF so bpf2go emits its Go mirror.
const struct event *unused_event __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

// live holds every socket reported in LISTEN, keyed by socket pointer: the
// snapshot reports only sockets not in it, and sys_exit_listen completes
// only sockets still in it.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} live SEC(".maps");

// pending parks listen() calls that started without a port, per thread.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u64);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct port_key);
	__type(value, struct port_val);
} ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, COUNTER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline __u32 netns_of(const struct sock *sk)
{
	return BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
}

static __always_inline bool is_tcp_inet(const struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);
	return BPF_CORE_READ(sk, sk_protocol) == IPPROTO_TCP &&
	       (family == AF_INET || family == AF_INET6);
}

static __always_inline struct event *reserve(void)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		count(COUNTER_RINGBUF_DROPS);
	return e;
}

// emit_listener reports sk with everything user space needs to decide
// whether a connect to some address would reach it.
static __always_inline void emit_listener(const struct sock *sk, __u8 kind)
{
	struct event *e = reserve();
	if (!e)
		return;
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->sk = (__u64)sk;
	e->cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
	e->netns = netns_of(sk);
	e->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	e->port = BPF_CORE_READ(sk, __sk_common.skc_num);
	e->bound_dev_if = BPF_CORE_READ(sk, __sk_common.skc_bound_dev_if);
	e->ack_backlog = BPF_CORE_READ(sk, sk_ack_backlog);
	e->max_ack_backlog = BPF_CORE_READ(sk, sk_max_ack_backlog);
	if (e->family == AF_INET) {
		__be32 a = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__builtin_memcpy(e->addr, &a, sizeof(a));
	} else {
		BPF_CORE_READ_INTO(&e->addr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		e->v6only = BPF_CORE_READ_BITFIELD_PROBED(sk, __sk_common.skc_ipv6only);
	}
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void on_listen(const struct sock *sk)
{
	__u64 key = (__u64)sk;
	__u8 one = 1;

	if (bpf_map_update_elem(&live, &key, &one, BPF_ANY))
		count(COUNTER_LIVE_FULL);
	emit_listener(sk, EVENT_ADD);
	// listen() without bind(): the port is chosen after this transition.
	if (BPF_CORE_READ(sk, __sk_common.skc_num) == 0) {
		__u64 tid = bpf_get_current_pid_tgid();
		bpf_map_update_elem(&pending, &tid, &key, BPF_ANY);
	}
}

// on_unlisten reports a listener that closed (close(), shutdown(), a failed
// listen()). It reports even sockets it never saw listen, such as ones the
// snapshot missed, so user space can drop what it learned from sock_diag.
static __always_inline void on_unlisten(const struct sock *sk)
{
	__u64 key = (__u64)sk;

	bpf_map_delete_elem(&live, &key);
	emit_listener(sk, EVENT_REMOVE);
}

// check_queue runs when a passively opened child completes its handshake:
// the child has just been queued on a listener of its port. A listener whose
// queue is now over its backlog drops the next SYN, so user space learns it.
static __always_inline void check_queue(const struct sock *child)
{
	struct port_key key = {
		.netns = netns_of(child),
		.port = BPF_CORE_READ(child, __sk_common.skc_num),
	};
	struct port_val *val = bpf_map_lookup_elem(&ports, &key);
	if (!val)
		return;
	for (int i = 0; i < MAX_PORT_LISTENERS; i++) {
		const struct sock *sk = (const struct sock *)val->sk[i];
		if (!sk)
			break;
		__u32 backlog = BPF_CORE_READ(sk, sk_ack_backlog);
		__u32 max = BPF_CORE_READ(sk, sk_max_ack_backlog);
		if (backlog > max)
			emit_listener(sk, EVENT_FULL);
	}
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(on_state, const struct sock *sk, int oldstate, int newstate)
{
	if (!is_tcp_inet(sk))
		return 0;
	// A child of a listener is cloned in LISTEN state and moves to
	// SYN_RECV: only LISTEN -> CLOSE is a listener going away.
	if (newstate == TCP_LISTEN) {
		// Give the socket its cookie now: the ID sock_diag reports too.
		if (have_tracing_cookie)
			bpf_get_socket_cookie((void *)sk);
		on_listen(sk);
	}
	else if (oldstate == TCP_LISTEN && newstate == TCP_CLOSE)
		on_unlisten(sk);
	else if (oldstate == TCP_SYN_RECV && newstate == TCP_ESTABLISHED)
		check_queue(sk);
	return 0;
}

// on_listen_exit completes a listen() that started without a port: the
// port is assigned by now, so the listener is reported again with it.
SEC("tracepoint/syscalls/sys_exit_listen")
int on_listen_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 tid = bpf_get_current_pid_tgid();
	__u64 *skp = bpf_map_lookup_elem(&pending, &tid);
	if (!skp)
		return 0;
	__u64 key = *skp;
	bpf_map_delete_elem(&pending, &tid);
	if (BPF_CORE_READ(ctx, ret) != 0 || !bpf_map_lookup_elem(&live, &key))
		return 0;
	const struct sock *sk = (const struct sock *)key;
	emit_listener(sk, EVENT_ADD);
	return 0;
}

// snapshot_one claims sk for the snapshot if it is a TCP listener that has
// not been reported yet. Tasks share files and files share sockets, and the
// live hook may have seen it already: BPF_NOEXIST reports each socket once.
static __always_inline bool snapshot_one(const struct sock *sk)
{
	__u64 key = (__u64)sk;
	__u8 one = 1;

	if (!sk || !is_tcp_inet(sk) || BPF_CORE_READ(sk, __sk_common.skc_state) != TCP_LISTEN)
		return false;
	return bpf_map_update_elem(&live, &key, &one, BPF_NOEXIST) == 0;
}

// snapshot_sk reports sk if it listens and was not reported yet. trusted
// says sk came from bpf_sock_from_file, a pointer the verifier may accept
// for bpf_get_socket_cookie (have_snapshot_cookie says whether this kernel
// does); on the sockfs path it is a plain number.
static __always_inline void snapshot_sk(struct sock *sk, bool trusted)
{
	if (!sk)
		return;
	if (BPF_CORE_READ(sk, sk_protocol) == IPPROTO_MPTCP) {
		// Go listens with MPTCP by default: TCP listens on the first
		// subflow. Its cookie cannot be generated from here; user space
		// learns it from sock_diag.
		if (!bpf_core_field_exists(struct mptcp_sock, first))
			return;
		sk = BPF_CORE_READ((struct mptcp_sock *)sk, first);
		if (snapshot_one(sk))
			emit_listener(sk, EVENT_ADD);
		return;
	}
	if (snapshot_one(sk)) {
		if (trusted && have_tracing_cookie && have_snapshot_cookie)
			bpf_get_socket_cookie(sk);
		emit_listener(sk, EVENT_ADD);
	}
}

// sockfs_sk returns the socket of a file the way sock_from_file() does
// before bpf_sock_from_file exists: a socket's file lives on sockfs and
// holds its struct socket in private_data (sock_alloc_file()). An O_PATH
// file of a socket has no private data.
static __always_inline struct sock *sockfs_sk(struct file *file)
{
	if (BPF_CORE_READ(file, f_inode, i_sb, s_magic) != SOCKFS_MAGIC)
		return NULL;
	struct socket *sock = BPF_CORE_READ(file, private_data);
	if (!sock)
		return NULL;
	return BPF_CORE_READ(sock, sk);
}

// snapshot visits every open file of every task once; run after on_state is
// attached, it reports listeners that existed before loading.
SEC("iter/task_file")
int snapshot(struct bpf_iter__task_file *ctx)
{
	struct file *file = ctx->file;
	if (!file)
		return 0;
	if (have_sock_from_file) {
		struct socket *sock = bpf_sock_from_file(file);
		if (sock)
			snapshot_sk(sock->sk, true);
	} else {
		snapshot_sk(sockfs_sk(file), false);
	}
	return 0;
}

// marker is run on demand (BPF_PROG_TEST_RUN) to put a barrier into the
// event stream: once user space reads it, every earlier event is applied.
// It returns 1 when the ring buffer had no room, so the caller retries.
SEC("raw_tp")
int marker(struct bpf_raw_tracepoint_args *ctx)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return 1;
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = EVENT_MARKER;
	e->sk = ctx->args[0];
	bpf_ringbuf_submit(e, 0);
	return 0;
}
