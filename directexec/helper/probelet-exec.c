// SPDX-License-Identifier: Apache-2.0
// probelet-exec: probelet's direct exec helper. It runs one exec probe
// command inside a running container the way `runc exec` does, in runc's
// order (libcontainer/nsenter/nsexec.c, setns_init_linux.go,
// init_linux.go finalizeNamespace), and compiles OCI seccomp profiles with
// libseccomp, the library runc compiles them with.
//
// It is a static, single-threaded C program because setns(2) into a mount
// or user namespace refuses multi-threaded callers, and a Go process is
// always multi-threaded.
//
//   probelet-exec version   prints the protocol version
//   probelet-exec compile   stdin: a seccomp description; stdout: the filter
//   probelet-exec run       fd 0: a unix socket carrying the request in and
//                           one status line out; fds 1 and 2: the command's
//                           stdout and stderr
//   probelet-exec serve     runs `run` in a child per probe whose three fds
//                           arrive over the SOCK_SEQPACKET socket on fd 0
//
// The request is what probelet read from the container's OCI bundle: every
// credential the command gets comes from there; the helper adds nothing.
// Records are a tag byte, a little-endian u32 length and the payload.
//
// The status line is one of: "exit N", "signal N", "timeout", "cancelled",
// "exec-error MSG" (the runtime would fail the exec the same way: command
// not found, ...), "setup-error MSG" (the helper could not reproduce the
// runtime's setup; probelet asks the runtime instead), "lsm-error MSG" (the
// container's AppArmor profile could not be applied; likewise), "gone MSG" (the
// container is not running), "container-exited" (its init exited while
// the command ran) and "paused" (its cgroups are frozen: runc refuses such
// an exec).

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/statfs.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROTOCOL_VERSION 2

// The hardening this object was compiled with, as the compiler saw it
// (hack/build-exec-helper.sh asks for it; directexec's helper build test
// and `readelf -p .probelet.hardening` read it back).
#define HARDENING_STR_(x) #x
#define HARDENING_STR(x) HARDENING_STR_(x)
#if defined(_FORTIFY_SOURCE) && defined(__OPTIMIZE__)
#define HARDENING_FORTIFY HARDENING_STR(_FORTIFY_SOURCE)
#else
#define HARDENING_FORTIFY "0"
#endif
#if defined(__SSP_ALL__)
#define HARDENING_SSP "all"
#elif defined(__SSP_STRONG__)
#define HARDENING_SSP "strong"
#elif defined(__SSP__)
#define HARDENING_SSP "some"
#else
#define HARDENING_SSP "none"
#endif
#if defined(__PIE__)
#define HARDENING_PIE "yes"
#else
#define HARDENING_PIE "no"
#endif
__attribute__((used, section(".probelet.hardening"))) static const char hardening[] =
	"fortify=" HARDENING_FORTIFY " ssp=" HARDENING_SSP " pie=" HARDENING_PIE;

// Bounds on what a request may carry; probelet stays far below them.
#define MAX_REQUEST (8u << 20)
#define MAX_ITEMS 4096
#define MAX_TREE 4096

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_RAISE 2
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif
#ifndef KEYCTL_JOIN_SESSION_KEYRING
#define KEYCTL_JOIN_SESSION_KEYRING 1
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

// ---------------------------------------------------------------- buffers

struct buf {
	unsigned char *p;
	size_t len;
};

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("probelet-exec: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		die("out of memory");
	return p;
}

// read_full reads exactly len bytes; 0 on success, -1 on EOF or error.
static int read_full(int fd, void *p, size_t len)
{
	unsigned char *b = p;
	while (len > 0) {
		ssize_t n = read(fd, b, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_full(int fd, const void *p, size_t len)
{
	const unsigned char *b = p;
	while (len > 0) {
		ssize_t n = write(fd, b, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

// read_record reads one record; the payload is NUL-terminated for strings.
static int read_record(int fd, unsigned char *tag, struct buf *payload, size_t *total)
{
	unsigned char hdr[5];
	if (read_full(fd, hdr, sizeof(hdr)) < 0)
		return -1;
	uint32_t len = le32(hdr + 1);
	*total += sizeof(hdr) + len;
	if (*total > MAX_REQUEST)
		die("request larger than %u bytes", MAX_REQUEST);
	*tag = hdr[0];
	payload->p = xcalloc(1, (size_t)len + 1);
	payload->len = len;
	if (len > 0 && read_full(fd, payload->p, len) < 0)
		return -1;
	return 0;
}

// str checks that a string payload holds no NUL: execve and the kernel
// would silently cut it there.
static char *str(struct buf *b, const char *what)
{
	if (strlen((char *)b->p) != b->len)
		die("%s contains a NUL byte", what);
	return (char *)b->p;
}

static void need(struct buf *b, size_t len, const char *what)
{
	if (b->len != len)
		die("%s record has %zu bytes, want %zu", what, b->len, len);
}

// ---------------------------------------------------------------- compile

// compile reads a seccomp description (written by probelet from the
// container's OCI profile, already in runc's terms: actions as libseccomp
// action values, one record per rule runc would add) and builds the filter
// exactly as runc's libcontainer/seccomp.InitSeccomp does, then exports it.
// probelet prepends runc's -ENOSYS stub, which needs the largest syscall
// number the profile names per architecture: printed here too.
static int compile(void)
{
	scmp_filter_ctx ctx = NULL;
	size_t total = 0;
	char *archs[64];
	int narchs = 0, explicit_flags = 0, log = 0, ssb = 0;
	char **names = xcalloc(MAX_ITEMS, sizeof(char *));
	int nnames = 0;

	for (;;) {
		unsigned char tag;
		struct buf b;
		if (read_record(0, &tag, &b, &total) < 0)
			die("compile: truncated description");
		if (tag == 'Z')
			break;
		switch (tag) {
		case 'd':
			need(&b, 4, "default action");
			if (ctx)
				die("compile: two default actions");
			ctx = seccomp_init(le32(b.p));
			if (!ctx)
				die("compile: seccomp_init(%#x) failed", le32(b.p));
			// runc: SetNoNewPrivsBit(false); it sets no_new_privs itself.
			if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) != 0)
				die("compile: cannot clear the no_new_privs attribute");
			break;
		case 'a': {
			if (!ctx || narchs >= 64)
				die("compile: architecture out of place");
			char *name = str(&b, "architecture");
			uint32_t arch = seccomp_arch_resolve_name(name);
			if (arch == 0)
				die("compile: unknown architecture %s", name);
			int rc = seccomp_arch_add(ctx, arch);
			if (rc != 0 && rc != -EEXIST)
				die("compile: cannot add architecture %s: %s", name, strerror(-rc));
			archs[narchs++] = name;
			break;
		}
		case 'f': {
			if (!ctx)
				die("compile: flag before the default action");
			char *flag = str(&b, "flag");
			explicit_flags = 1;
			if (strcmp(flag, "SECCOMP_FILTER_FLAG_TSYNC") == 0)
				break; // runc ignores it
			if (strcmp(flag, "SECCOMP_FILTER_FLAG_LOG") == 0) {
				if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1) != 0)
					die("compile: flag %s is not supported", flag);
				log = 1;
			} else if (strcmp(flag, "SECCOMP_FILTER_FLAG_SPEC_ALLOW") == 0) {
				if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_SSB, 1) != 0)
					die("compile: flag %s is not supported", flag);
				ssb = 1;
			} else {
				die("compile: flag %s is not supported", flag);
			}
			break;
		}
		case 'F':
			explicit_flags = 1; // an explicitly empty set: no default flag
			break;
		case 'n':
			// Every syscall the profile names, whatever its action.
			if (nnames >= MAX_ITEMS)
				die("compile: too many syscall names");
			names[nnames++] = str(&b, "syscall name");
			break;
		case 'o':
			// runc: SetOptimize(2) for more than 32 rules; failure is not fatal.
			if (ctx)
				seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
			break;
		case 'r': {
			if (!ctx || b.len < 8)
				die("compile: rule out of place");
			uint32_t action = le32(b.p), ncond = le32(b.p + 4);
			size_t condlen = (size_t)ncond * 24;
			if (ncond > 6 || b.len < 8 + condlen)
				die("compile: malformed rule");
			struct scmp_arg_cmp cond[6];
			for (uint32_t i = 0; i < ncond; i++) {
				const unsigned char *c = b.p + 8 + i * 24;
				cond[i].arg = le32(c);
				cond[i].op = (enum scmp_compare)le32(c + 4);
				cond[i].datum_a = le64(c + 8);
				cond[i].datum_b = le64(c + 16);
			}
			char *name = (char *)b.p + 8 + condlen;
			if (strlen(name) != b.len - 8 - condlen)
				die("compile: syscall name contains a NUL byte");
			// runc resolves names for the native architecture and skips
			// the ones it does not know.
			int nr = seccomp_syscall_resolve_name(name);
			if (nr == __NR_SCMP_ERROR)
				break;
			int rc = seccomp_rule_add_array(ctx, action, nr, ncond, ncond ? cond : NULL);
			if (rc != 0)
				die("compile: rule for %s: %s", name, strerror(-rc));
			break;
		}
		default:
			die("compile: unknown record %#x", tag);
		}
	}
	if (!ctx)
		die("compile: no default action");
	// runc's default when the profile sets no flags: SPEC_ALLOW if
	// libseccomp and the kernel support it (API level 4).
	if (!explicit_flags && seccomp_api_get() >= 4 && seccomp_attr_set(ctx, SCMP_FLTATR_CTL_SSB, 1) == 0)
		ssb = 1;

	uint32_t flags = 0;
	if (log && seccomp_api_get() >= 3)
		flags |= SECCOMP_FILTER_FLAG_LOG;
	if (ssb && seccomp_api_get() >= 4)
		flags |= SECCOMP_FILTER_FLAG_SPEC_ALLOW;

	unsigned char out[9] = {'f'};
	put32(out + 1, 4);
	put32(out + 5, flags);
	write_full(1, out, sizeof(out));

	// The largest syscall number the profile names, per architecture of the
	// filter plus the native one (runc's findLastSyscalls).
	uint32_t tokens[65];
	int ntokens = 0;
	tokens[ntokens++] = seccomp_arch_native();
	for (int i = 0; i < narchs; i++) {
		uint32_t t = seccomp_arch_resolve_name(archs[i]);
		int seen = 0;
		for (int j = 0; j < ntokens; j++)
			seen |= tokens[j] == t;
		if (!seen)
			tokens[ntokens++] = t;
	}
	for (int i = 0; i < ntokens; i++) {
		int32_t max = 0;
		for (int j = 0; j < nnames; j++) {
			int nr = seccomp_syscall_resolve_name_arch(tokens[i], names[j]);
			if (nr != __NR_SCMP_ERROR && nr > max)
				max = nr;
		}
		unsigned char m[13] = {'m'};
		put32(m + 1, 8);
		put32(m + 5, tokens[i]);
		put32(m + 9, (uint32_t)max);
		write_full(1, m, sizeof(m));
	}

	int mfd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
	if (mfd < 0)
		die("compile: memfd_create: %s", strerror(errno));
	int rc = seccomp_export_bpf(ctx, mfd);
	if (rc != 0)
		die("compile: export: %s", strerror(-rc));
	off_t size = lseek(mfd, 0, SEEK_END);
	if (size <= 0 || size % sizeof(struct sock_filter) != 0 || size > 65535 * (off_t)sizeof(struct sock_filter))
		die("compile: exported filter has %lld bytes", (long long)size);
	unsigned char *prog = xcalloc(1, (size_t)size);
	if (pread(mfd, prog, (size_t)size, 0) != size)
		die("compile: reading the exported filter: %s", strerror(errno));
	unsigned char hdr[5] = {'b'};
	put32(hdr + 1, (uint32_t)size);
	write_full(1, hdr, sizeof(hdr));
	write_full(1, prog, (size_t)size);
	write_full(1, "Z\0\0\0\0", 5);
	seccomp_release(ctx);
	return 0;
}

// ---------------------------------------------------------------- request

struct rlim {
	int resource;
	struct rlimit lim;
};

struct request {
	pid_t pid;
	uint64_t start_time;
	char *cgroups[64];
	int ncgroups;
	struct rlim rlimits[RLIM_NLIMITS];
	int nrlimits;
	int has_oom;
	int oom;
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	int ngroups;
	int has_caps;
	uint64_t bounding, effective, inheritable, permitted, ambient;
	int nnp;
	int has_umask;
	mode_t umask;
	char *keyring;
	char *apparmor;
	int has_seccomp;
	uint32_t seccomp_flags;
	struct sock_fprog filter;
	char **env;
	int nenv;
	int home_lookup;
	char *cwd;
	char **args;
	int nargs;
	uint64_t timeout_ms;
};

static void read_request(int fd, struct request *r)
{
	size_t total = 0;
	int have_pid = 0, have_user = 0;
	r->env = xcalloc(MAX_ITEMS + 2, sizeof(char *));
	r->args = xcalloc(MAX_ITEMS + 1, sizeof(char *));
	for (;;) {
		unsigned char tag;
		struct buf b;
		if (read_record(fd, &tag, &b, &total) < 0)
			die("run: truncated request");
		switch (tag) {
		case 'Z':
			if (!have_pid || !have_user || r->nargs == 0 || !r->cwd || !r->timeout_ms)
				die("run: incomplete request");
			return;
		case 'P':
			need(&b, 12, "pid");
			r->pid = (pid_t)le32(b.p);
			r->start_time = le64(b.p + 4);
			have_pid = r->pid > 0;
			break;
		case 'C':
			if (r->ncgroups >= 64)
				die("run: too many cgroups");
			r->cgroups[r->ncgroups++] = str(&b, "cgroup");
			break;
		case 'L':
			need(&b, 20, "rlimit");
			if (r->nrlimits >= RLIM_NLIMITS)
				die("run: too many rlimits");
			r->rlimits[r->nrlimits].resource = (int)le32(b.p);
			r->rlimits[r->nrlimits].lim.rlim_cur = le64(b.p + 4);
			r->rlimits[r->nrlimits].lim.rlim_max = le64(b.p + 12);
			r->nrlimits++;
			break;
		case 'O':
			need(&b, 4, "oom_score_adj");
			r->has_oom = 1;
			r->oom = (int32_t)le32(b.p);
			break;
		case 'U':
			need(&b, 8, "user");
			r->uid = le32(b.p);
			r->gid = le32(b.p + 4);
			have_user = 1;
			break;
		case 'G':
			if (b.len % 4 != 0 || b.len / 4 > MAX_ITEMS)
				die("run: malformed groups");
			r->ngroups = (int)(b.len / 4);
			r->groups = xcalloc((size_t)r->ngroups, sizeof(gid_t));
			for (int i = 0; i < r->ngroups; i++)
				r->groups[i] = le32(b.p + 4 * i);
			break;
		case 'K':
			need(&b, 40, "capabilities");
			r->has_caps = 1;
			r->bounding = le64(b.p);
			r->effective = le64(b.p + 8);
			r->inheritable = le64(b.p + 16);
			r->permitted = le64(b.p + 24);
			r->ambient = le64(b.p + 32);
			break;
		case 'N':
			r->nnp = 1;
			break;
		case 'M':
			need(&b, 4, "umask");
			r->has_umask = 1;
			r->umask = (mode_t)le32(b.p);
			break;
		case 'R':
			r->keyring = str(&b, "keyring");
			break;
		case 'a':
			r->apparmor = str(&b, "AppArmor profile");
			break;
		case 'S':
			if (b.len < 4 + sizeof(struct sock_filter) || (b.len - 4) % sizeof(struct sock_filter) != 0 ||
			    (b.len - 4) / sizeof(struct sock_filter) > 65535)
				die("run: malformed seccomp filter");
			r->has_seccomp = 1;
			r->seccomp_flags = le32(b.p);
			r->filter.len = (unsigned short)((b.len - 4) / sizeof(struct sock_filter));
			r->filter.filter = (struct sock_filter *)(b.p + 4);
			break;
		case 'E':
			if (r->nenv >= MAX_ITEMS)
				die("run: too many environment variables");
			r->env[r->nenv++] = str(&b, "environment variable");
			break;
		case 'H':
			r->home_lookup = 1;
			break;
		case 'D':
			r->cwd = str(&b, "cwd");
			break;
		case 'A':
			if (r->nargs >= MAX_ITEMS)
				die("run: too many arguments");
			r->args[r->nargs++] = str(&b, "argument");
			break;
		case 'T':
			need(&b, 8, "timeout");
			r->timeout_ms = le64(b.p);
			break;
		default:
			die("run: unknown record %#x", tag);
		}
	}
}

// ---------------------------------------------------------------- child

// errstr is strerror in Go's words (lower case), as runc's messages have it.
static const char *errstr(int err)
{
	static char b[128];
	snprintf(b, sizeof(b), "%s", strerror(err));
	if (b[0] >= 'A' && b[0] <= 'Z' && !(b[1] >= 'A' && b[1] <= 'Z'))
		b[0] = (char)(b[0] - 'A' + 'a');
	return b;
}

// The child reports a failure before execve through a close-on-exec pipe:
// 'E' and a message when the runtime would fail the exec the same way (the
// command cannot be found or run), 'S' when the helper could not set up
// what the runtime would have.
static int errpipe = -1;

static void __attribute__((noreturn)) fail(char kind, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	msg[0] = kind;
	vsnprintf(msg + 1, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	write_full(errpipe, msg, strlen(msg));
	_exit(127);
}

static int nstype(const char *name)
{
	static const struct {
		const char *name;
		int type;
	} types[] = {
		{"cgroup", CLONE_NEWCGROUP}, {"ipc", CLONE_NEWIPC}, {"mnt", CLONE_NEWNS}, {"net", CLONE_NEWNET},
		{"pid", CLONE_NEWPID},       {"time", CLONE_NEWTIME}, {"user", CLONE_NEWUSER}, {"uts", CLONE_NEWUTS},
	};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(name, types[i].name) == 0)
			return types[i].type;
	return 0;
}

struct ns {
	int fd;
	int type;
	char name[16];
};

// setns_all joins the namespaces in ns[] of the given types: first every
// one but the user namespace with the host's privileges, then the user
// namespace (becoming its root, as runc does), then whatever the host could
// not join (nsexec.c join_namespaces).
static void setns_all(struct ns *ns, int n, int types)
{
	for (int pass = 0; pass < 3; pass++) {
		for (int i = 0; i < n; i++) {
			if (ns[i].fd < 0 || !(ns[i].type & types))
				continue;
			if ((pass == 1) != (ns[i].type == CLONE_NEWUSER))
				continue;
			if (setns(ns[i].fd, ns[i].type) < 0) {
				if (errno == EPERM && pass == 0)
					continue;
				fail('S', "setns into the %s namespace: %s", ns[i].name, strerror(errno));
			}
			if (ns[i].type == CLONE_NEWUSER && setresuid(0, 0, 0) < 0)
				fail('S', "becoming root in the user namespace: %s", strerror(errno));
			close(ns[i].fd);
			ns[i].fd = -1;
		}
	}
}

static uint64_t lastcap = 40; // read by the parent from the host's /proc

static uint64_t last_cap(void)
{
	char b[16] = {0};
	int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 40;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	return n > 0 ? strtoull(b, NULL, 10) : 40;
}

struct capdata {
	uint32_t effective, permitted, inheritable;
};

static int capget2(struct capdata d[2])
{
	struct {
		uint32_t version;
		int pid;
	} hdr = {0x20080522, 0};
	return (int)syscall(SYS_capget, &hdr, d);
}

// drop_bounding drops every capability outside the bounding set, when the
// process may (moby/sys/capability Apply(BOUNDS): only with CAP_SETPCAP
// effective, EINVAL ignored); without CAP_SETPCAP it fails closed.
static void drop_bounding(const struct request *r, uint64_t last)
{
	struct capdata d[2];
	if (capget2(d) < 0)
		fail('S', "capget: %s", strerror(errno));
	if (!(d[0].effective & (1u << 8 /* CAP_SETPCAP */))) {
		// runc skips the drop here and the command keeps a wider bounding
		// set than the container's. Fail closed instead: a capability
		// that should go and cannot sends the probe to the runtime.
		for (uint64_t c = 0; c <= last; c++)
			if (!(r->bounding & (1ull << c)) && prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
				fail('S', "the bounding set holds capability %llu, which the container's does not, and "
					  "cannot drop it without CAP_SETPCAP",
				     (unsigned long long)c);
		return;
	}
	for (uint64_t c = 0; c <= last; c++) {
		if (r->bounding & (1ull << c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			fail('S', "dropping capability %llu from the bounding set: %s", (unsigned long long)c,
			     strerror(errno));
	}
}

static void apply_caps(const struct request *r, uint64_t last)
{
	drop_bounding(r, last);
	struct {
		uint32_t version;
		int pid;
	} hdr = {0x20080522, 0};
	struct capdata d[2] = {
		{(uint32_t)r->effective, (uint32_t)r->permitted, (uint32_t)r->inheritable},
		{(uint32_t)(r->effective >> 32), (uint32_t)(r->permitted >> 32), (uint32_t)(r->inheritable >> 32)},
	};
	if (syscall(SYS_capset, &hdr, d) < 0)
		fail('S', "capset: %s", strerror(errno));
	// runc: clear the ambient set (EINVAL: an old kernel), then raise each
	// ambient capability, ignoring failures as runc does.
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		fail('S', "clearing ambient capabilities: %s", strerror(errno));
	for (uint64_t c = 0; c <= last; c++)
		if (r->ambient & (1ull << c))
			prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0);
}

// fix_stdio gives the command's stdio to its user, as runc's
// fixStdioPermissions: skipped for /dev/null, for files already owned and
// where the kernel refuses.
static void fix_stdio(uid_t uid)
{
	for (int fd = 0; fd <= 2; fd++) {
		struct stat st;
		if (fstat(fd, &st) < 0)
			fail('S', "fstat of fd %d: %s", fd, strerror(errno));
		if (st.st_uid == uid || (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)))
			continue;
		if (fchown(fd, uid, (gid_t)-1) < 0 && errno != EPERM && errno != EROFS)
			fail('S', "fchown of fd %d: %s", fd, strerror(errno));
	}
}

static void setup_user(const struct request *r)
{
	fix_stdio(r->uid);
	// Supplementary groups unless the user namespace denies setgroups.
	char deny[16] = {0};
	int fd = open("/proc/self/setgroups", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, deny, sizeof(deny) - 1) < 0)
			fail('S', "reading /proc/self/setgroups: %s", strerror(errno));
		close(fd);
	} else if (errno != ENOENT) {
		fail('S', "opening /proc/self/setgroups: %s", strerror(errno));
	}
	if (strncmp(deny, "deny", 4) != 0 && setgroups((size_t)r->ngroups, r->groups) < 0)
		fail('S', "setgroups: %s", strerror(errno));
	if (setgid(r->gid) < 0)
		fail('S', errno == EINVAL ? "cannot setgid to unmapped gid %u in user namespace" : "setgid %u: %s",
		     r->gid, strerror(errno));
	if (setuid(r->uid) < 0)
		fail('S', errno == EINVAL ? "cannot setuid to unmapped uid %u in user namespace" : "setuid %u: %s",
		     r->uid, strerror(errno));
}

// go_atoi is strconv.Atoi as moby/sys/user uses it: errors ignored, so
// anything that is not a decimal number reads as 0.
static long long go_atoi(const char *s)
{
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	if (!*p)
		return 0;
	for (const char *q = p; *q; q++)
		if (*q < '0' || *q > '9')
			return 0;
	errno = 0;
	long long v = strtoll(s, NULL, 10);
	return errno ? 0 : v;
}

// home returns the home directory of uid in the container's /etc/passwd,
// "/" when there is none: runc's getUserHome with moby/sys/user's parser
// (lines trimmed, empty ones skipped, the first match wins).
static char *home(uid_t uid)
{
	static char dir[4096];
	FILE *f = fopen("/etc/passwd", "re");
	if (!f)
		return "/";
	char line[65536];
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end = line + strlen(line);
		while (p < end && (*p == ' ' || (*p >= '\t' && *p <= '\r')))
			p++;
		while (end > p && (end[-1] == ' ' || (end[-1] >= '\t' && end[-1] <= '\r')))
			*--end = 0;
		if (!*p)
			continue;
		char *field[7] = {0};
		int n = 0;
		for (; n < 7 && p; n++) {
			field[n] = p;
			p = strchr(p, ':');
			if (p)
				*p++ = 0;
		}
		if (n < 3 || go_atoi(field[2]) != (long long)uid)
			continue;
		fclose(f);
		snprintf(dir, sizeof(dir), "%s", n > 5 ? field[5] : "");
		return dir;
	}
	fclose(f);
	return "/";
}

// find_executable is Go's os/exec findExecutable, which runc's LookPath
// uses: 0, or an errno with *from_stat set when stat(2) gave it.
static int find_executable(const char *file, int *from_stat)
{
	struct stat st;
	*from_stat = 0;
	if (stat(file, &st) < 0) {
		*from_stat = 1;
		return errno;
	}
	if (S_ISDIR(st.st_mode))
		return EISDIR;
	if (faccessat(AT_FDCWD, file, X_OK, AT_EACCESS) == 0)
		return 0;
	if (errno != ENOSYS && errno != EPERM)
		return errno;
	return (st.st_mode & 0111) ? 0 : EACCES;
}

// look_path resolves name like runc's exec.LookPath with the command's
// PATH, failing with the runtime's own words.
static char *look_path(const char *name, char **env)
{
	static char path[4096];
	int from_stat;
	if (strchr(name, '/')) {
		int err = find_executable(name, &from_stat);
		if (err && from_stat)
			fail('E', "exec: \"%s\": stat %s: %s", name, name, errstr(err));
		if (err)
			fail('E', "exec: \"%s\": %s", name, errstr(err));
		return (char *)name;
	}
	const char *dirs = "";
	for (char **e = env; *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			dirs = *e + 5;
	while (*dirs) {
		const char *end = strchrnul(dirs, ':');
		int n = (int)(end - dirs);
		if (n == 0)
			snprintf(path, sizeof(path), "%s", name);
		else
			snprintf(path, sizeof(path), "%.*s/%s", n, dirs, name);
		if (find_executable(path, &from_stat) == 0) {
			if (path[0] != '/')
				fail('E', "exec: \"%s\": cannot run executable found relative to current directory", name);
			return path;
		}
		dirs = *end ? end + 1 : end;
	}
	fail('E', "exec: \"%s\": executable file not found in $PATH", name);
}

static void load_seccomp(const struct request *r)
{
	long rc;
	if (r->seccomp_flags == 0)
		rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &r->filter, 0, 0);
	else
		rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, r->seccomp_flags, &r->filter);
	if (rc < 0)
		fail('S', "loading the seccomp filter: %s", strerror(errno));
}

// intermediate is runc's nsexec stage 1: born in the host's namespaces
// (nothing in the container can see it), it joins the container's cgroups,
// sets what must be set before a user namespace, joins every namespace of
// the container, and only then forks the command's process, which so is
// born inside all of them: no process of the container's pid namespace is
// ever in the host's mount namespace (a container process with
// CAP_SYS_PTRACE could otherwise open /proc/N/root of it). It hands the
// command's pid (in the host's numbering) to the helper on pidout and
// exits; the helper, a child subreaper as the runtime's shim is, inherits
// the command. The whole helper is non-dumpable from its start.
// hostproc is the helper's own procfs (the host's pid namespace), opened
// before any namespace of the container is joined: the container's /proc
// is its own to remount, so nothing in it decides where a profile is
// written.
static int hostproc = -1;

// apply_apparmor is runc's apparmor.ApplyProfile: "exec PROFILE" written
// to the process's own attr/apparmor/exec (attr/exec before Linux 5.8's
// LSM-specific directory), so the kernel confines the command from its
// execve. Only a task may write its own attributes: this is the child,
// through thread-self of the host's procfs.
static void apply_apparmor(const struct request *r)
{
	int fd = openat(hostproc, "thread-self/attr/apparmor/exec", O_WRONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		fd = openat(hostproc, "thread-self/attr/exec", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		fail('A', "apparmor failed to apply profile %s: %s", r->apparmor, strerror(errno));
	char v[4200];
	int n = snprintf(v, sizeof(v), "exec %s", r->apparmor);
	if (n <= 0 || (size_t)n >= sizeof(v) || write(fd, v, (size_t)n) != n)
		fail('A', "apparmor failed to apply profile %s: %s", r->apparmor, strerror(errno));
	close(fd);
}

static void __attribute__((noreturn)) child(struct request *r, int devnull);

static void __attribute__((noreturn))
intermediate(struct request *r, struct ns *ns, int nns, int *cgroupfds, int devnull, int pidout)
{
	// runc's parent moves the process into the container's cgroups, then
	// resets its CPU affinity (tryResetCPUAffinity).
	for (int i = 0; i < r->ncgroups; i++) {
		if (write(cgroupfds[i], "0", 1) != 1)
			fail('S', "joining cgroup %s: %s", r->cgroups[i], strerror(errno));
		close(cgroupfds[i]);
	}
	cpu_set_t all;
	memset(&all, 0xff, sizeof(all));
	sched_setaffinity(0, sizeof(all), &all);

	// nsexec: oom_score_adj, then non-dumpable while joining.
	if (r->has_oom) {
		char v[16];
		int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		int n = snprintf(v, sizeof(v), "%d", r->oom);
		if (fd < 0 || write(fd, v, (size_t)n) != n)
			fail('S', "setting oom_score_adj %d: %s", r->oom, strerror(errno));
		close(fd);
	}
	// runc sets the rlimits from its parent before the process could enter
	// a user namespace (no raising them there).
	for (int i = 0; i < r->nrlimits; i++)
		if (setrlimit(r->rlimits[i].resource, &r->rlimits[i].lim) < 0)
			fail('S', "setting rlimit %d: %s", r->rlimits[i].resource, strerror(errno));

	// The pid and time namespaces apply to the children of the caller:
	// joined first, while the host's privileges still hold, then the rest.
	for (int i = 0; i < nns; i++)
		if ((ns[i].type & (CLONE_NEWPID | CLONE_NEWTIME)) && setns(ns[i].fd, ns[i].type) < 0)
			fail('S', "setns into the %s namespace: %s", ns[i].name, strerror(errno));
	setns_all(ns, nns, ~(CLONE_NEWPID | CLONE_NEWTIME));

	pid_t pid = fork();
	if (pid < 0)
		fail('S', "fork: %s", strerror(errno));
	if (pid == 0) {
		close(pidout);
		child(r, devnull);
	}
	write_full(pidout, &pid, sizeof(pid));
	_exit(0);
}

// child is the command's process, runc's nsexec stage 2 and `runc init`
// (setns) in their order; it is born in every namespace of the container
// (intermediate joined them) and execs the command.
static void __attribute__((noreturn)) child(struct request *r, int devnull)
{
	// Nothing of the helper's reaches the command: signals back to their
	// defaults, no fds but stdio and the error pipe (close-on-exec).
	sigset_t none;
	sigemptyset(&none);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(devnull, 0) < 0)
		fail('S', "stdin: %s", strerror(errno));
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		fail('S', "close_range: %s", strerror(errno));

	if (setsid() < 0)
		fail('S', "setsid: %s", strerror(errno));
	if (setuid(0) < 0 || setgid(0) < 0)
		fail('S', "becoming root: %s", strerror(errno));

	// runc init (setns_init_linux.go).
	if (r->keyring && syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, r->keyring) < 0 && errno != ENOSYS)
		fail('S', "unable to join session keyring: %s", strerror(errno));
	if (r->nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail('S', "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	if (r->has_umask)
		umask(r->umask);
	if (r->has_seccomp && !r->nnp)
		load_seccomp(r);

	// finalizeNamespace.
	int chdir_later = 0;
	if (chdir(r->cwd) < 0) {
		if (errno != EACCES && errno != EPERM)
			fail('S', "chdir to cwd (\"%s\") set in config.json failed: %s", r->cwd, strerror(errno));
		chdir_later = 1;
	}
	if (r->home_lookup) {
		static char homevar[4200];
		snprintf(homevar, sizeof(homevar), "HOME=%s", home(r->uid));
		r->env[r->nenv++] = homevar;
	}
	r->env[r->nenv] = NULL;
	uint64_t last = lastcap;
	if (r->has_caps)
		drop_bounding(r, last);
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		fail('S', "PR_SET_KEEPCAPS: %s", strerror(errno));
	setup_user(r);
	if (chdir_later && chdir(r->cwd) < 0)
		fail('S', "chdir to cwd (\"%s\") set in config.json failed: %s", r->cwd, strerror(errno));
	char wd[4096];
	long n = syscall(SYS_getcwd, wd, sizeof(wd));
	if (n < 0 || wd[0] != '/')
		fail('S', "current working directory is outside of container mount namespace root -- possible "
			  "container breakout detected");
	if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0)
		fail('S', "PR_SET_KEEPCAPS: %s", strerror(errno));
	if (r->has_caps)
		apply_caps(r, last);
	if (r->apparmor)
		apply_apparmor(r);

	char *path = look_path(r->args[0], r->env);
	if (r->has_seccomp && r->nnp)
		load_seccomp(r);
	r->args[r->nargs] = NULL;
	execve(path, r->args, r->env);
	fail('E', "exec %s: %s", path, errstr(errno));
}

// ---------------------------------------------------------------- parent

static int ctl = 0; // the control socket: request in, status out

static void status(const char *fmt, ...)
{
	char line[1200];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	write_full(ctl, line, (size_t)n);
}

static int pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

// exited reports whether the process of pidfd has exited.
static int exited(int pidfd)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	return poll(&p, 1, 0) == 1;
}

// read_stat reads /proc/PID/stat: field 3 (state), 9 (flags) and 22
// (start time).
static int read_stat(pid_t pid, char *state, unsigned long *flags, uint64_t *start)
{
	char path[64], b[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	b[n] = 0;
	char *p = strrchr(b, ')'); // comm may hold spaces and parentheses
	if (!p || p[1] != ' ')
		return -1;
	p += 2;
	*state = *p;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -1;
		p++;
		if (field == 8)
			*flags = strtoul(p, NULL, 10);
	}
	*start = strtoull(p, NULL, 10);
	return 0;
}

// init_exiting reports whether the container's init has exited or is
// exiting (PF_EXITING): the kernel then kills every process of its pid
// namespace, the command among them.
static int init_exiting(int initfd, pid_t pid)
{
	char state;
	unsigned long flags = 0;
	uint64_t start;
	return exited(initfd) || read_stat(pid, &state, &flags, &start) < 0 || (flags & 0x4 /* PF_EXITING */);
}

static int pidfd_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

// kill_tree stops the command and every descendant it has (so none can
// fork while they are collected), then kills them all and the command's
// session. Every process is signalled through a pidfd opened while its
// parent is stopped (a stopped parent cannot reap it, so the pid read from
// its children list is still that process): a pid that was reused meanwhile
// is never signalled. The command's own pid is this helper's child, not
// yet waited for, so its session id is still its own.
static void kill_tree(pid_t root, int rootfd)
{
	static struct {
		pid_t pid;
		int fd;
	} tree[MAX_TREE];
	int n = 0, done = 0;
	tree[n].pid = root;
	tree[n++].fd = rootfd;
	pidfd_signal(rootfd, SIGSTOP);
	for (int round = 0; round < 3 && n > done; round++) {
		int end = n;
		for (int i = done; i < end; i++) {
			char path[64];
			snprintf(path, sizeof(path), "/proc/%d/task", tree[i].pid);
			DIR *d = opendir(path);
			if (!d)
				continue;
			struct dirent *e;
			while ((e = readdir(d))) {
				if (e->d_name[0] == '.')
					continue;
				char cpath[320], b[4096];
				snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children", tree[i].pid, e->d_name);
				int fd = open(cpath, O_RDONLY | O_CLOEXEC);
				if (fd < 0)
					continue;
				ssize_t len = read(fd, b, sizeof(b) - 1);
				close(fd);
				if (len <= 0)
					continue;
				b[len] = 0;
				for (char *tok = strtok(b, " \n"); tok && n < MAX_TREE; tok = strtok(NULL, " \n")) {
					pid_t c = (pid_t)atoi(tok);
					int cfd = pidfd_open(c);
					if (cfd < 0)
						continue;
					pidfd_signal(cfd, SIGSTOP);
					tree[n].pid = c;
					tree[n++].fd = cfd;
				}
			}
			closedir(d);
		}
		done = end;
	}
	kill(-root, SIGKILL);
	for (int i = 0; i < n; i++) {
		pidfd_signal(tree[i].fd, SIGKILL);
		if (i > 0)
			close(tree[i].fd);
	}
}

// paused reports whether the container's cgroups are frozen or freezing
// (v1's freezer.state shows a parent's freeze too; v2's cgroup.freeze):
// runc refuses to exec into a paused container, and a process that joined
// one would stop there. A freeze after this check is met by the bounded
// waits of run.
static int paused(const struct request *r)
{
	for (int i = 0; i < r->ncgroups; i++) {
		static const char *const files[] = {"freezer.state", "cgroup.freeze"};
		for (int f = 0; f < 2; f++) {
			char path[4200], b[16] = {0};
			snprintf(path, sizeof(path), "%s/%s", r->cgroups[i], files[f]);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			ssize_t n = read(fd, b, sizeof(b) - 1);
			close(fd);
			if (n > 0 && (f == 0 ? strncmp(b, "THAWED", 6) != 0 : b[0] == '1'))
				return 1;
		}
	}
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// How a wait ended: what it waited for happened, the probe's deadline
// passed, or probelet hung up the control socket (the probe was
// cancelled).
enum { HAPPENED = 0, TIMED_OUT = 1, CANCELLED = 2 };

// await_fd waits until fd is readable or hung up, the deadline passes or
// ctl is hung up. Every wait of the helper is bounded so: a process of the
// probe may be frozen (its container's cgroup paused) or stuck, and the
// helper must still answer by the deadline and end.
static int await_fd(int fd, int64_t deadline)
{
	struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = ctl, .events = POLLIN | POLLRDHUP}};
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return TIMED_OUT;
		if (poll(p, 2, left > 1000000 ? 1000000 : (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return CANCELLED;
		}
		if (p[0].revents)
			return HAPPENED;
		if (p[1].revents)
			return CANCELLED;
	}
}

// REAP_GRACE_MS bounds the wait for a killed child to end: a process in a
// frozen cgroup keeps a SIGKILL pending until it is thawed, and the helper
// leaves it then (its parent becomes the subreaper above, or init, which
// reaps it once it dies) rather than wait for ever.
#define REAP_GRACE_MS 1000

// reap waits until deadline for the helper's child pid (pidfd) to end and
// reaps it into *ws; it returns 0 when the child did not end in time.
static int reap(pid_t pid, int pidfd, int64_t deadline, int *ws)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	for (;;) {
		int64_t left = deadline - now_ms();
		int n = poll(&p, 1, left <= 0 ? 0 : left > 1000000 ? 1000000 : (int)left);
		if (n == 1)
			break;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || left <= 0)
			return 0;
	}
	while (waitpid(pid, ws, 0) < 0 && errno == EINTR)
		;
	return 1;
}

static int run(void)
{
	struct request r = {0};
	signal(SIGPIPE, SIG_IGN);
	read_request(ctl, &r);
	// Non-dumpable from the start, so that every process forked for the
	// probe is too until the command's execve (runc's nsexec does the
	// same before it joins anything); a child subreaper, so that the
	// command becomes this helper's child once the intermediate exits
	// (the runtime's shim is one for the same reason).
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		status("setup-error prctl: %s", strerror(errno));
		return 0;
	}

	// The container's init: a pidfd holds on to it, its start time proves
	// it is the process probelet read the container's settings for.
	int initfd = pidfd_open(r.pid);
	uint64_t started;
	unsigned long flags;
	char state;
	if (initfd < 0 || read_stat(r.pid, &state, &flags, &started) < 0 || started != r.start_time || state == 'Z' ||
	    state == 'X') {
		status("gone the container's init process %d is not running", r.pid);
		return 0;
	}

	// Its namespaces: every one that differs from the helper's, opened
	// while the pidfd shows the init is still the same process.
	struct ns ns[16];
	int nns = 0;
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/ns", r.pid);
	DIR *d = opendir(dir);
	if (!d) {
		status("gone the container's init process %d is not running", r.pid);
		return 0;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strstr(e->d_name, "_for_children"))
			continue;
		char target[320], self[320];
		struct stat ts, ss;
		snprintf(target, sizeof(target), "%s/%s", dir, e->d_name);
		snprintf(self, sizeof(self), "/proc/self/ns/%s", e->d_name);
		if (stat(target, &ts) < 0)
			continue;
		if (stat(self, &ss) == 0 && ss.st_dev == ts.st_dev && ss.st_ino == ts.st_ino)
			continue;
		int type = nstype(e->d_name);
		if (!type) {
			status("setup-error the container is in a %s namespace the helper does not know", e->d_name);
			return 0;
		}
		if (nns >= 16)
			break;
		ns[nns].fd = open(target, O_RDONLY | O_CLOEXEC);
		if (ns[nns].fd < 0) {
			status("setup-error opening %s: %s", target, strerror(errno));
			return 0;
		}
		ns[nns].type = type;
		snprintf(ns[nns].name, sizeof(ns[nns].name), "%.15s", e->d_name);
		nns++;
	}
	closedir(d);
	if (exited(initfd)) {
		status("gone the container's init process %d exited", r.pid);
		return 0;
	}

	int cgroupfds[64];
	for (int i = 0; i < r.ncgroups; i++) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/cgroup.procs", r.cgroups[i]);
		cgroupfds[i] = open(path, O_WRONLY | O_CLOEXEC);
		if (cgroupfds[i] < 0) {
			if (exited(initfd))
				status("gone the container's init process %d exited", r.pid);
			else
				status("setup-error opening %s: %s", path, strerror(errno));
			return 0;
		}
	}
	if (paused(&r)) {
		status("paused");
		return 0;
	}
	if (r.apparmor) {
		struct statfs sfs;
		hostproc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (hostproc < 0 || fstatfs(hostproc, &sfs) < 0 || sfs.f_type != PROC_SUPER_MAGIC) {
			status("lsm-error /proc is not procfs: the AppArmor profile cannot be applied");
			return 0;
		}
	}
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC); // as the shim gives it
	int pipefd[2], pidpipe[2];
	if (devnull < 0 || pipe2(pipefd, O_CLOEXEC) < 0 || pipe2(pidpipe, O_CLOEXEC) < 0) {
		status("setup-error %s", strerror(errno));
		return 0;
	}

	lastcap = last_cap();
	int64_t deadline = now_ms() + (int64_t)r.timeout_ms;
	pid_t mid = fork();
	if (mid < 0) {
		status("setup-error fork: %s", strerror(errno));
		return 0;
	}
	if (mid == 0) {
		errpipe = pipefd[1];
		close(pipefd[0]);
		close(pidpipe[0]);
		intermediate(&r, ns, nns, cgroupfds, devnull, pidpipe[1]);
	}
	int midfd = pidfd_open(mid);
	close(pipefd[1]);
	close(pidpipe[1]);
	close(devnull);
	for (int i = 0; i < r.ncgroups; i++)
		close(cgroupfds[i]);
	for (int i = 0; i < nns; i++)
		close(ns[i].fd);
	// The command's pid, or nothing when the intermediate failed (its
	// reason is on the error pipe). Once the intermediate is reaped, the
	// command is this helper's child: its pid cannot be reused before
	// this helper waits for it.
	// The intermediate joins the container's cgroups: in a frozen one it
	// stops there, so neither its pid nor its end may be waited for past
	// the deadline (it and whatever it forked are then killed).
	if (midfd < 0) {
		kill(mid, SIGKILL);
		waitpid(mid, NULL, 0);
		status("setup-error pidfd_open: %s", strerror(errno));
		return 0;
	}
	pid_t pid = -1;
	ssize_t got = -1;
	int ended = await_fd(pidpipe[0], deadline);
	if (ended == HAPPENED) {
		while ((got = read(pidpipe[0], &pid, sizeof(pid))) < 0 && errno == EINTR)
			;
	}
	close(pidpipe[0]);
	int mws;
	if (ended == HAPPENED && !reap(mid, midfd, deadline, &mws))
		ended = TIMED_OUT;
	if (ended != HAPPENED) {
		kill_tree(mid, midfd);
		reap(mid, midfd, now_ms() + REAP_GRACE_MS, &mws);
		status(ended == TIMED_OUT ? "timeout" : "cancelled");
		return 0;
	}
	close(midfd);
	if (got != (ssize_t)sizeof(pid)) {
		char msg[1025] = {0};
		size_t msglen = 0;
		ssize_t k;
		while (msglen < sizeof(msg) - 1 && (k = read(pipefd[0], msg + msglen, sizeof(msg) - 1 - msglen)) > 0)
			msglen += (size_t)k;
		if (init_exiting(initfd, r.pid))
			status("gone the container's init process %d exited", r.pid);
		else if (msglen > 0)
			status("setup-error %s", msg + 1);
		else
			status("setup-error the helper's intermediate process ended (status %d)", mws);
		return 0;
	}
	int childfd = pidfd_open(pid);
	if (childfd < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		status("setup-error pidfd_open: %s", strerror(errno));
		return 0;
	}

	char msg[1025] = {0};
	size_t msglen = 0;
	struct pollfd p[3] = {
		{.fd = childfd, .events = POLLIN},
		{.fd = pipefd[0], .events = POLLIN},
		{.fd = ctl, .events = POLLIN | POLLRDHUP},
	};
	while (!(p[0].revents & POLLIN)) {
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			ended = TIMED_OUT;
			break;
		}
		if (poll(p, 3, left > 1000000 ? 1000000 : (int)left) < 0 && errno != EINTR) {
			ended = CANCELLED;
			break;
		}
		if (p[1].revents) {
			ssize_t k = read(pipefd[0], msg + msglen, sizeof(msg) - 1 - msglen);
			if (k > 0)
				msglen += (size_t)k;
			else
				p[1].fd = -1; // closed: execve happened (or the child died)
		}
		if (p[2].revents) {
			ended = CANCELLED; // probelet closed the socket
			break;
		}
	}
	int ws = 0;
	if (ended) {
		kill_tree(pid, childfd);
		// A frozen command keeps its end of the error pipe open: its
		// message, if any, is read without waiting for that end.
		if (!reap(pid, childfd, now_ms() + REAP_GRACE_MS, &ws) && p[1].fd >= 0)
			fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
	} else {
		while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
			;
	}
	if (p[1].fd >= 0) {
		ssize_t k;
		while (msglen < sizeof(msg) - 1 && (k = read(pipefd[0], msg + msglen, sizeof(msg) - 1 - msglen)) > 0)
			msglen += (size_t)k;
	}
	msg[msglen] = 0;

	if (ended == TIMED_OUT)
		status("timeout");
	else if (ended == CANCELLED)
		status("cancelled");
	else if (msglen > 0 && msg[0] == 'E')
		status("exec-error %s", msg + 1);
	else if (msglen > 0 && init_exiting(initfd, r.pid))
		status("gone the container's init process %d exited", r.pid);
	else if (msglen > 0 && msg[0] == 'A')
		status("lsm-error %s", msg + 1);
	else if (msglen > 0)
		status("setup-error %s", msg + 1);
	else if (init_exiting(initfd, r.pid))
		status("container-exited");
	else if (WIFSIGNALED(ws))
		status("signal %d", WTERMSIG(ws));
	else
		status("exit %d", WEXITSTATUS(ws));
	return 0;
}

// ---------------------------------------------------------------- serve

// serve keeps one helper running for all probes, so a probe costs a fork
// of this small process instead of starting a program: fd 0 is a
// SOCK_SEQPACKET socket on which probelet sends, per probe, one message
// carrying three fds (the probe's control socket, stdout, stderr). Each
// probe runs in a child that does what `run` does; the server reaps the
// children (so their CPU time is accounted to it) and exits when probelet
// closes the socket.
static int serve(void)
{
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		die("serve: signalfd: %s", strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("serve: poll: %s", strerror(errno));
		}
		if (p[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) > 0)
				;
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
		}
		if (!p[0].revents)
			continue;
		char byte;
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(3 * sizeof(int))];
		} cm;
		struct iovec iov = {.iov_base = &byte, .iov_len = 1};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof(cm.b)};
		ssize_t n = recvmsg(0, &m, MSG_CMSG_CLOEXEC);
		if (n == 0)
			break; // probelet is gone
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			die("serve: recvmsg: %s", strerror(errno));
		}
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		int fds[3] = {-1, -1, -1};
		int nfds = 0;
		if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			memcpy(fds, CMSG_DATA(c), (size_t)(nfds > 3 ? 3 : nfds) * sizeof(int));
		}
		if (nfds != 3 || byte != 'r' || (m.msg_flags & MSG_CTRUNC)) {
			for (int i = 0; i < 3 && i < nfds; i++)
				close(fds[i]);
			continue; // not a probe: the control socket closes, probelet sees no status
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(sfd);
			sigprocmask(SIG_UNBLOCK, &chld, NULL);
			// The probe's control socket, stdout and stderr become 0, 1, 2.
			for (int i = 0; i < 3; i++) {
				int fd = fds[i] > 2 ? fds[i] : fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
				fds[i] = fd;
			}
			for (int i = 0; i < 3; i++)
				if (dup2(fds[i], i) < 0)
					_exit(2);
			for (int i = 0; i < 3; i++)
				close(fds[i]);
			_exit(run());
		}
		for (int i = 0; i < 3; i++)
			close(fds[i]);
	}
	return 0;
}

// check decodes a request on stdin as run does and prints what it
// decoded on one line, touching no process: probelet's fuzz test of the
// decoder (FuzzHelperRequest). A request run would refuse, check refuses
// the same way (exit 2 and a message).
static int check(void)
{
	struct request r = {0};
	read_request(0, &r);
	printf("ok pid=%d start=%llu args=%d env=%d cgroups=%d rlimits=%d groups=%d caps=%d seccomp=%d filter=%u "
	       "apparmor=%s timeout=%llu\n",
	       (int)r.pid, (unsigned long long)r.start_time, r.nargs, r.nenv, r.ncgroups, r.nrlimits, r.ngroups,
	       r.has_caps, r.has_seccomp, r.has_seccomp ? (unsigned)r.filter.len : 0u, r.apparmor ? r.apparmor : "-",
	       (unsigned long long)r.timeout_ms);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "version") == 0) {
		printf("probelet-exec %d\n", PROTOCOL_VERSION);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "compile") == 0)
		return compile();
	if (argc == 2 && strcmp(argv[1], "run") == 0)
		return run();
	if (argc == 2 && strcmp(argv[1], "serve") == 0)
		return serve();
	if (argc == 2 && strcmp(argv[1], "check") == 0)
		return check();
	fprintf(stderr, "usage: probelet-exec version|compile|run|serve|check (started by probelet)\n");
	return 2;
}
