/*
 * monoclock: a monotonic clock for scripts/bench, which runs it as a
 * coprocess: for every line read on stdin it writes CLOCK_MONOTONIC in
 * microseconds and a newline on stdout. Exits at the end of its input.
 *
 * bash has only the wall clock ($EPOCHREALTIME), which can step; a round
 * trip through this process costs tens of microseconds, far less than
 * starting a program to read the clock.
 */
#include <stdio.h>
#include <time.h>

int main(void)
{
	int ch;
	while ((ch = getchar()) != EOF) {
		if (ch != '\n')
			continue;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		printf("%lld\n", (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
		fflush(stdout);
	}
	return 0;
}
