// What moving one cache line between two CPUs costs on this machine: the unit of the probe's
// shared-table cost (docs/probe.md, Cost). Two threads, pinned to CPUs 0 and 1, hand a counter in
// one line back and forth; a round trip is two transfers. Also the vDSO clock read, for scale.
//   cc -O2 -pthread bench/line_transfer.c -o /tmp/line_transfer && /tmp/line_transfer
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define ROUNDS 2000000

static volatile uint64_t line[8] __attribute__((aligned(64)));

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof s, &s);
}

static void *other(void *arg)
{
	(void)arg;
	pin(1);
	for (uint64_t i = 1; i <= ROUNDS; i++) {
		while (line[0] != 2 * i - 1)
			;
		line[0] = 2 * i;
	}
	return NULL;
}

static double ns_since(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1e9 + (b.tv_nsec - a->tv_nsec);
}

int main(void)
{
	pthread_t t;
	struct timespec a;
	pthread_create(&t, NULL, other, NULL);
	pin(0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (uint64_t i = 1; i <= ROUNDS; i++) {
		line[0] = 2 * i - 1;
		while (line[0] != 2 * i)
			;
	}
	double rt = ns_since(&a) / ROUNDS;
	pthread_join(t, NULL);
	uint64_t sum = 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < ROUNDS; i++) {
		struct timespec e;
		clock_gettime(CLOCK_MONOTONIC, &e);
		sum += (uint64_t)e.tv_nsec;
	}
	double ck = ns_since(&a) / ROUNDS;
	printf("cache line between CPU 0 and 1: round trip %.1f ns, one transfer %.1f ns\n", rt, rt / 2);
	printf("clock_gettime (vDSO): %.1f ns (%llu)\n", ck, (unsigned long long)(sum & 1));
	return 0;
}
