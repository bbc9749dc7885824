// SPDX-License-Identifier: GPL-2.0
/*
 * Fixture, not a selftest: busy_clock [SECONDS] reads the cycle counter and the time of day in
 * a tight loop on every CPU for SECONDS (default 30), as perftest's clock calibration does at
 * both ends of a pair at once. Under TCG that load makes the clocksource watchdog declare the
 * TSC unstable and switch the guest to the emulated HPET, reliably, unless the guest boots
 * with tsc=reliable. Used by hand to show that dmesg_clean.sh notices
 * (docs/hardening.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

int main(int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN), seconds = argc > 1 ? atol(argv[1]) : 30;
	char clock[32] = "?";
	FILE *f;

	for (long i = 0; i < cpus; i++) {
		if (fork() == 0) {
			struct timeval start, now;
			unsigned long long cycles = 0;

			gettimeofday(&start, NULL);
			do {
				cycles += __rdtsc() & 1;
				gettimeofday(&now, NULL);
			} while (now.tv_sec - start.tv_sec < seconds);
			_exit(cycles == 0xffffffffffffffffULL);
		}
	}
	while (wait(NULL) > 0)
		;
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (f && fscanf(f, "%31s", clock) != 1)
		clock[0] = '?';
	if (f)
		fclose(f);
	printf("busy_clock: %ld s on %ld CPUs; the clocksource is now %s\n", seconds, cpus, clock);
	return 0;
}
