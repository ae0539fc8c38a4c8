// SPDX-License-Identifier: Apache-2.0
// wakefloor: what one timer wake-up of an otherwise idle process costs on
// this machine with no language runtime in the way — timerfd_settime, then
// epoll_wait until it fires, 20 ms apart, as BenchmarkAlarmWakeUp in
// prober/ does for the scheduler's alarm. It prints a line in go test
// -bench's format so hack/bench.sh shows the two side by side: the
// difference is the Go runtime's share of a short-circuited probe's cost,
// the rest is the kernel's and the hypervisor's.
//
//   cc -O2 -o wakefloor wakefloor.c && ./wakefloor [wake-ups]
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static double cpu_us(void) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static double wall_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 250;
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = tfd};
	if (n < 1 || tfd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) < 0) {
		perror("wakefloor");
		return 1;
	}
	double cpu0 = cpu_us(), wall0 = wall_ns();
	for (int i = 0; i < n; i++) {
		struct itimerspec its = {.it_value = {.tv_nsec = 20 * 1000 * 1000}};
		uint64_t expirations;
		if (timerfd_settime(tfd, 0, &its, NULL) < 0 || epoll_wait(ep, &ev, 1, -1) != 1 ||
		    read(tfd, &expirations, sizeof expirations) != sizeof expirations) {
			perror("wakefloor");
			return 1;
		}
	}
	printf("BenchmarkWakeUpFloor/c-timerfd\t%8d\t%12.0f ns/op\t%12.2f cpu-µs/wake-up\n", n,
	       (wall_ns() - wall0) / n, (cpu_us() - cpu0) / n);
	return 0;
}
