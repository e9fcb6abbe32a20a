/*
 * cli.h - the FUSE-free command line: ls, cat, extract, info.  It walks the
 * same tree a mount shows, through the same core calls.
 */
#ifndef SV_CLI_H
#define SV_CLI_H

#include <stdbool.h>

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

#endif
