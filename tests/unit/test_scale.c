/*
 * test_scale.c - opening is proportional to the index (DESIGN.md: no input
 * may hang; opening reads the index only).  Each case is a datafile of a
 * hundred KB to a few MB whose index has a shape real maps do not have
 * but any input may: many items under one name, or very many types.
 * A linear open does a bounded amount of work per entry: its name lookups
 * take a few hash-chain steps each (sv_container_name_steps), so the
 * bound is on steps per item, whatever the machine's load; the time is
 * only printed (speed is measured in scripts/bench), and a watchdog of
 * 300 s ends a case that would hang.
 */
#include "container.h"
#include "savefs.h"
#include "fmt/teeworlds/datafile.h"
#include "t.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Hash-chain steps per item: a linear open takes a handful; one that
 * searched names linearly would take thousands. */
#define STEPS_PER_ITEM 16
#define WATCHDOG 300

static const char *current;

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "test_scale: a case ran past the watchdog: ";
	write(2, msg, sizeof msg - 1);
	write(2, current, strlen(current));
	write(2, "\n", 1);
	_exit(1);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Writes the items (no data) with the project's writer, opens the bytes
 * from memory, walks nothing: only the open is timed. */
static void timed_open(const char *what, const struct sv_df_witem *items, size_t n,
		       uint32_t expect_files_min)
{
	current = what;
	int fd = memfd_create("scale", 0);
	struct sv_df_spec s = {.magic = "DATA", .version = 4, .items = items, .nitems = n,
			       .level = -1};
	struct sv_err err;
	sv_err_clear(&err);
	T_INT(0, sv_df_write(fd, &s, &err));
	off_t len = lseek(fd, 0, SEEK_END);
	uint8_t *p = malloc((size_t)len);
	T_INT(len, pread(fd, p, (size_t)len, 0));
	close(fd);
	struct sv_opts o;
	sv_opts_init(&o);
	alarm(WATCHDOG);
	double t0 = now();
	struct sv_container *c = NULL;
	int rc = sv_container_open_mem(p, (size_t)len, &o, &c, &err);
	double dt = now() - t0;
	alarm(0);
	if (rc)
		fprintf(stderr, "  (%s: %s)\n", what, err.msg);
	T_INT(0, rc);
	uint64_t steps = c ? sv_container_name_steps(c) : 0;
	fprintf(stderr, "%s: %lld bytes, %zu items, opened in %.3f s, %llu name steps "
		"(%.1f an item)\n", what, (long long)len, n, dt, (unsigned long long)steps,
		(double)steps / (double)n);
	if (steps > (uint64_t)STEPS_PER_ITEM * n)
		fprintf(stderr, "  (%s: over %d steps an item)\n", what, STEPS_PER_ITEM);
	T_OK(steps <= (uint64_t)STEPS_PER_ITEM * n);
	if (c)
		T_OK(sv_node_count(c) >= expect_files_min);
	sv_container_free(c);
	free(p);
}

static void dup_ids(void)
{
	/* 12000 items of one type with one id: one name, suffixed ~2, ~3, ... */
	enum { NDUP = 12000 };
	struct sv_df_witem *dup = calloc(NDUP, sizeof *dup);
	for (size_t i = 0; i < NDUP; i++)
		dup[i] = (struct sv_df_witem){5, 0, NULL, 0};
	timed_open("duplicate ids", dup, NDUP, NDUP);
	free(dup);
}

static void every_type(void)
{
	/* Every possible type, two items each. */
	enum { NTYPES = 65536, PER = 2 };
	struct sv_df_witem *many = calloc((size_t)NTYPES * PER, sizeof *many);
	for (size_t i = 0; i < (size_t)NTYPES * PER; i++)
		many[i] = (struct sv_df_witem){(uint16_t)(i % NTYPES), (uint16_t)(i / NTYPES),
					       NULL, 0};
	timed_open("every type", many, (size_t)NTYPES * PER, NTYPES * PER);
	free(many);
}

int main(void)
{
	/* Each case in its own process, so that one running into the
	 * watchdog does not hide the others. */
	static void (*const cases[])(void) = {dup_ids, every_type};
	signal(SIGALRM, on_alarm);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		fflush(stderr);
		pid_t pid = fork();
		if (pid == 0) {
			cases[i]();
			_exit(t_done());
		}
		int status = 0;
		waitpid(pid, &status, 0);
		T_INT(0, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	}
	return t_done();
}
