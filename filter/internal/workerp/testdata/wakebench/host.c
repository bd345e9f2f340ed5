// The host of BenchmarkCallbackWakeups, standing in for an Envoy worker: one
// thread on CPU 0 of its affinity waits in epoll for a timer firing RATE
// times a second and calls the library's hook HOOKS times per tick, as
// Envoy calls a module's hooks per request. It prints the process's CPU time
// and context switches per request.
//
// usage: host LIBRARY RATE SECONDS HOOKS
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

static void (*hook)(void);
static long rate, seconds, hooks;

static void *worker(void *unused) {
	int ep = epoll_create1(0), timer = timerfd_create(CLOCK_MONOTONIC, 0);
	struct itimerspec period = {{0, 1000000000L / rate}, {0, 1000000000L / rate}};
	struct epoll_event ev = {.events = EPOLLIN};
	if (ep < 0 || timer < 0 || timerfd_settime(timer, 0, &period, NULL) != 0 || epoll_ctl(ep, EPOLL_CTL_ADD, timer, &ev) != 0) {
		perror("host: timer");
		exit(1);
	}
	for (long done = 0; done < rate * seconds;) {
		unsigned long long ticks;
		if (epoll_wait(ep, &ev, 1, -1) != 1 || read(timer, &ticks, sizeof ticks) != sizeof ticks) {
			continue;
		}
		for (unsigned long long t = 0; t < ticks; t++, done++) {
			for (long h = 0; h < hooks; h++) {
				hook();
			}
		}
	}
	return unused;
}

static double cpu_seconds(const struct rusage *u) {
	return u->ru_utime.tv_sec + u->ru_stime.tv_sec + 1e-6 * (u->ru_utime.tv_usec + u->ru_stime.tv_usec);
}

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: host LIBRARY RATE SECONDS HOOKS\n");
		return 2;
	}
	rate = atol(argv[2]), seconds = atol(argv[3]), hooks = atol(argv[4]);
	cpu_set_t allowed, one;
	sched_getaffinity(0, sizeof allowed, &allowed);
	CPU_ZERO(&one);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (CPU_ISSET(cpu, &allowed)) {
			CPU_SET(cpu, &one);
			break;
		}
	}
	sched_setaffinity(0, sizeof one, &one); // the library's threads too, as Envoy pinned to one CPU
	void *lib = dlopen(argv[1], RTLD_NOW);
	if (lib == NULL || (hook = (void (*)(void))dlsym(lib, "wakebench_hook")) == NULL) {
		fprintf(stderr, "host: %s\n", dlerror());
		return 1;
	}
	struct rusage before, after;
	getrusage(RUSAGE_SELF, &before);
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	getrusage(RUSAGE_SELF, &after);
	double requests = (double)rate * seconds;
	printf("%.3f %.4f\n", (cpu_seconds(&after) - cpu_seconds(&before)) / requests * 1e6,
	       (after.ru_nvcsw + after.ru_nivcsw - before.ru_nvcsw - before.ru_nivcsw) / requests);
	return 0;
}
