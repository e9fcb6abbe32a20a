/*
 * cli.h - the FUSE-free command line: ls, cat, extract, info.  It walks the
 * same tree a mount shows, through the same core calls.
 */
#ifndef SV_CLI_H
#define SV_CLI_H

#include <stdbool.h>
#include <stddef.h>

/* Exit codes, one per failure class (documented in --help and README). */
enum {
	SV_EXIT_OK = 0,
	SV_EXIT_FAIL = 1,      /* anything else: out of memory, writing output */
	SV_EXIT_USAGE = 2,     /* bad command line or option */
	SV_EXIT_OPEN = 3,      /* the container cannot be opened */
	SV_EXIT_FORMAT = 4,    /* no known format */
	SV_EXIT_MALFORMED = 5, /* malformed or unsupported container */
	SV_EXIT_MOUNT = 6,     /* the mount failed */
	SV_EXIT_PATH = 7,      /* a path is missing or a file unreadable */
	SV_EXIT_UNWRITTEN = 8, /* the daemon stopped with an edit it could not
				* write (its close had returned already) */
};

/* True if argv[1] names a command-line verb rather than a container. */
bool sv_cli_is_verb(const char *arg);
/* Runs a verb (argv[1]) or --help/--version/--formats; returns the exit code. */
int sv_cli_main(int argc, char **argv);
/* Maps a container-open error to its exit code. */
struct sv_err;
int sv_cli_open_exit(int err);
/* Says why the container at path could not be opened: "savefs: PATH: why". */
void sv_cli_open_error(const char *path, int rc, const struct sv_err *err);
/* Prints usage to stdout. */
void sv_cli_usage(void);

/* savefs diff [--stat | --name-only] A B (diff.c): the exit code, as
 * diff(1)'s. */
struct sv_opts;
int sv_cli_diff(int argc, char **argv, const struct sv_opts *o);

/* ---- mounts (mounts.c) ---- */

/* `savefs mounts` and `savefs umount`: the exit code. */
int sv_cli_mounts(const char *verb, int argc, char **argv);
/* The run directory where daemons leave their notes (made if need be):
 * 0, or -errno (-EPERM: not this user's own and closed to others). */
int sv_run_dir(char *buf, size_t size);
/* A mount of the kernel's table. */
struct sv_mount {
	char point[4096], source[4096], type[64];
	bool ro;
	long uid; /* its user_id (a FUSE mount's), or -1 */
};
/* fn called for each mount in turn until it returns non-zero: that
 * value, 0 past the last, or -errno if the table cannot be read. */
int sv_mounts_each(int (*fn)(void *arg, const struct sv_mount *m), void *arg);
/* The daemon's note of its mount, left when it starts serving. */
void sv_mount_register(const char *point, const char *location, const char *format, bool ro);
/* ... removed when it ends, and its status and report (the lines of
 * what it could not write) written for `savefs umount` if it asked. */
void sv_mount_unregister(int status, const char *report);

#endif
