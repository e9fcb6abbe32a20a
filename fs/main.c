/*
 * main.c - the savefs command: parses options, opens the container (its
 * index only), mounts it and runs the multi-threaded FUSE loop.  The verbs
 * ls, cat, extract and info are passed to the FUSE-free command line.
 *
 * The container is opened before daemonising, so that a bad container
 * fails in the foreground with its message and exit code.
 */
#include "fs.h"

#include "cli/cli.h"
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct cmdline {
	char *container, *mountpoint, *extra;
	char *cache, *format, *maxdecode, *maxedit, *readahead, *max_open, *spill;
	char *format_opts; /* -o keys a format takes, "key=value,..." */
	int ro, upgrade, noindex, help, version, allow_other;
	int nonopt;
};

enum { KEY_RO = 1, KEY_ALLOW_OTHER };

#define OPT(t, p) {t, offsetof(struct cmdline, p), 1}
static const struct fuse_opt savefs_opts[] = {
	OPT("cache=%s", cache),
	OPT("format=%s", format),
	OPT("maxdecode=%s", maxdecode),
	OPT("maxedit=%s", maxedit),
	OPT("readahead=%s", readahead),
	OPT("max_open=%s", max_open),
	OPT("spill=%s", spill),
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
	{"upgrade", offsetof(struct cmdline, upgrade), 1},
	{"noindex", offsetof(struct cmdline, noindex), 1},
	FUSE_OPT_END,
};

/* libfuse's own messages, kept to be said in savefs's words (and an
 * option's refusal, said the same way). */
static char fuse_said[1024];

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct cmdline *cl = data;
	if (key == KEY_RO) {
		cl->ro = 1;
		return 1; /* keep: the kernel marks the mount read-only too */
	}
	if (key == KEY_ALLOW_OTHER) {
		cl->allow_other = 1;
		return 1; /* kept, for libfuse */
	}
	if (key == FUSE_OPT_KEY_OPT) {
		/* An option of a format's own (events= for recordings): the
		 * core passes it on; FUSE never sees it. */
		size_t k = strcspn(arg, "=");
		if (arg[k] == '=' && sv_format_option(arg, k))
			return sv_format_opts_add(&cl->format_opts, arg) ? -1 : 0;
		if (sv_source_option(arg, k)) {
			/* An option of a kind of location: checked now, and
			 * passed on as the formats' are. */
			struct sv_err err;
			sv_err_clear(&err);
			if (sv_source_option_check(arg, &err)) {
				snprintf(fuse_said, sizeof fuse_said, "%s", err.msg);
				return -1;
			}
			return sv_format_opts_add(&cl->format_opts, arg) ? -1 : 0;
		}
		return 1;
	}
	if (key == FUSE_OPT_KEY_NONOPT) {
		/* Both taken here: FUSE's parser would fail on a missing mount
		 * point, which is a mount failure, not a usage error. */
		if (cl->nonopt == 0)
			cl->container = strdup(arg);
		else if (cl->nonopt == 1)
			cl->mountpoint = strdup(arg);
		else if (!cl->extra)
			cl->extra = strdup(arg);
		cl->nonopt++;
		return 0;
	}
	return 1;
}

static int parse_size_opt(const char *name, const char *val, uint64_t *out)
{
	if (!val)
		return 0;
	if (sv_parse_size(val, out)) {
		fprintf(stderr, "savefs: -o %s=%s: not a size (try 64M)\n", name, val);
		return -1;
	}
	return 0;
}


static void fuse_log_keep(enum fuse_log_level level, const char *fmt, va_list ap)
{
	size_t k = strlen(fuse_said);
	if (k < sizeof fuse_said - 1)
		vsnprintf(fuse_said + k, sizeof fuse_said - k, fmt, ap);
}

/* Options libfuse does not know fail here, as usage errors, before the
 * container is opened: libfuse parses them on a copy of the arguments. */
static int check_fuse_options(const struct fuse_args *args)
{
	struct fuse_args copy = FUSE_ARGS_INIT(0, NULL);
	for (int i = 0; i < args->argc; i++)
		fuse_opt_add_arg(&copy, args->argv[i]);
	static const struct fuse_lowlevel_ops none;
	fuse_said[0] = '\0';
	fuse_set_log_func(fuse_log_keep);
	struct fuse_session *se = fuse_session_new(&copy, &none, sizeof none, NULL);
	fuse_set_log_func(NULL);
	fuse_opt_free_args(&copy);
	if (se) {
		fuse_session_destroy(se);
		return 0;
	}
	char *msg = fuse_said;
	if (!strncmp(msg, "fuse: ", 6))
		msg += 6;
	size_t n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = '\0';
	fprintf(stderr, "savefs: %s (see savefs --help)\n", n ? msg : "bad options");
	return -1;
}

static int mounted_at(void *arg, const struct sv_mount *m)
{
	return !strcmp(m->point, arg);
}

/* Resolves the mount point to an absolute path (the daemon leaves the
 * working directory, and an unmount at a signal must find it) and checks
 * that nothing is mounted there.  0, or -1 with the reason said. */
static int mount_point(const char *given, char **out)
{
	const char *why = NULL;
	*out = realpath(given, NULL);
	if (!*out) {
		if (errno == ENOTCONN)
			fprintf(stderr, "savefs: cannot mount on %s: a mount whose file system is "
				"gone is there (%s): fusermount3 -u %s first\n", given,
				strerror(errno), given);
		else
			fprintf(stderr, "savefs: cannot mount on %s: %s\n", given, strerror(errno));
		return -1;
	}
	struct stat st;
	if (stat(*out, &st))
		why = strerror(errno);
	else if (!S_ISDIR(st.st_mode))
		why = "not a directory";
	if (!why && sv_mounts_each(mounted_at, *out) > 0)
		why = "something is mounted there already";
	if (why && !strcmp(why, "something is mounted there already")) {
		fprintf(stderr, "savefs: cannot mount on %s: %s (unmount it first: fusermount3 "
			"-u %s)\n", given, why, given);
		free(*out);
		*out = NULL;
		return -1;
	}
	if (why) {
		fprintf(stderr, "savefs: cannot mount on %s: %s\n", given, why);
		free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* The index of the command (ls, cat, extract, info) when options come
 * before it (savefs -o noindex info LOCATION), or 0. */
static int verb_after_options(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o")) {
			i++;
			continue;
		}
		if (argv[i][0] == '-')
			continue;
		return sv_cli_is_verb(argv[i]) ? i : 0;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && sv_cli_is_verb(argv[1]))
		return sv_cli_main(argc, argv);
	int verb = verb_after_options(argc, argv);
	if (verb) {
		/* The command first, its options after it. */
		char **args = calloc((size_t)argc + 1, sizeof *args);
		if (!args)
			return SV_EXIT_FAIL;
		args[0] = argv[0];
		args[1] = argv[verb];
		for (int i = 1, k = 2; i < argc; i++)
			if (i != verb)
				args[k++] = argv[i];
		int status = sv_cli_main(argc, args);
		free(args);
		return status;
	}

	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct cmdline cl = {0};
	struct fuse_cmdline_opts fo = {0};
	struct sv_opts o;
	struct sv_tree *t = NULL;
	struct fuse_session *se = NULL;
	struct fs fs = {0};
	char *mnt = NULL;
	int status = SV_EXIT_USAGE;
	bool registered = false;

	/* Decoded blobs are made in one worker thread and freed in another:
	 * one malloc arena keeps freed memory reusable, so the cache cap
	 * bounds the resident size. */
	mallopt(M_ARENA_MAX, 1);
	/* Blobs of a MiB and more get their own mappings, returned when
	 * freed: with glibc's sliding threshold, freed multi-MiB blobs (a
	 * map's images) stayed in the heap and the peak ran 10-20 MB past the
	 * cache cap.  Setting it also stops the threshold sliding. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	sv_opts_init(&o);
	fuse_said[0] = '\0';
	fuse_set_log_func(fuse_log_keep);
	int parsed = fuse_opt_parse(&args, &cl, savefs_opts, opt_proc) == 0 &&
		     fuse_parse_cmdline(&args, &fo) == 0;
	fuse_set_log_func(NULL);
	if (!parsed) {
		char *msg = !strncmp(fuse_said, "fuse: ", 6) ? fuse_said + 6 : fuse_said;
		msg[strcspn(msg, "\n")] = '\0';
		fprintf(stderr, "savefs: %s (see savefs --help)\n", *msg ? msg : "bad options");
		goto out;
	}
	if (fo.show_help) {
		sv_cli_usage();
		status = SV_EXIT_OK;
		goto out;
	}
	if (fo.show_version) {
		printf("savefs %s\n", SV_VERSION);
		status = SV_EXIT_OK;
		goto out;
	}
	if (fo.mountpoint || cl.extra) {
		fprintf(stderr, "savefs: too many arguments: `%s' after LOCATION and MOUNTPOINT "
			"(see savefs --help)\n", cl.extra ? cl.extra : fo.mountpoint);
		goto out;
	}
	if (!cl.container || !cl.mountpoint) {
		fprintf(stderr, "savefs: need LOCATION and MOUNTPOINT (see savefs --help)\n");
		goto out;
	}
	if (parse_size_opt("cache", cl.cache, &o.cache_cap) ||
	    parse_size_opt("maxdecode", cl.maxdecode, &o.max_decode) ||
	    parse_size_opt("maxedit", cl.maxedit, &o.max_edit))
		goto out;
	/* The daemon's own: the arrays of every container it serves, their
	 * window within what the cache's cap says of its memory. */
	uint64_t spill = SV_TAB_SPILL;
	if (cl.spill && parse_size_opt("spill", cl.spill, &spill))
		goto out;
	size_t at = spill ? (size_t)spill : SV_TAB_SPILL;
	sv_tab_configure(spill ? NULL : "", at, o.cache_cap);
	o.format = cl.format;
	o.format_opts = cl.format_opts;
	if (cl.readahead) {
		char *end;
		unsigned long v = strtoul(cl.readahead, &end, 10);
		if (*end || end == cl.readahead || v > 64) {
			fprintf(stderr, "savefs: -o readahead=%s: a number of files, 0 to 64\n",
				cl.readahead);
			goto out;
		}
		o.readahead = (unsigned)v;
	}
	if (cl.max_open) {
		char *end;
		unsigned long v = strtoul(cl.max_open, &end, 10);
		if (*end || end == cl.max_open || v < 1 || v > 4096) {
			fprintf(stderr, "savefs: -o max_open=%s: a number of containers, 1 to 4096\n",
				cl.max_open);
			goto out;
		}
		o.max_open = (unsigned)v;
	}
	o.read_only = cl.ro;
	o.upgrade = cl.upgrade;
	o.noindex = cl.noindex;
	/* Other users are let in only as the container's modes allow. */
	if (cl.allow_other)
		fuse_opt_add_arg(&args, "-odefault_permissions");
	if (check_fuse_options(&args))
		goto out;

	struct sv_err err;
	sv_err_clear(&err);
	int rc = sv_tree_open(cl.container, &o, &t, &err);
	if (rc == -ENOENT && !strchr(cl.container, '/')) {
		/* "savefs bogus x": a mistyped command, or a missing file. */
		fprintf(stderr, "savefs: %s: neither a command (ls, cat, extract, info) nor a "
			"container: %s\n", cl.container, strerror(ENOENT));
		status = sv_cli_open_exit(rc);
		goto out;
	}
	if (rc) {
		sv_cli_open_error(cl.container, rc, &err);
		status = sv_cli_open_exit(rc);
		goto out;
	}

	char fsname[4200];
	char *where = sv_tree_location(t);
	snprintf(fsname, sizeof fsname, "-ofsname=%s", where ? where : cl.container);
	free(where);
	for (char *p = fsname + 9; *p; p++)
		if (*p == ',' || *p == '\\')
			*p = '_'; /* would split or escape the option */
	fuse_opt_add_arg(&args, fsname);
	fuse_opt_add_arg(&args, "-osubtype=savefs");

	fs.t = t;
	fs.timeout = 86400.0;
	fs.cache_cap = o.cache_cap;
	fs.one_thread = fo.singlethread;
	status = SV_EXIT_MOUNT;
	if (sv_tree_is_folder(t) && sv_path_within(cl.mountpoint, cl.container)) {
		/* The folder would list its own mount, and the daemon serve
		 * itself. */
		fprintf(stderr, "savefs: %s: inside the folder %s: mount it elsewhere\n",
			cl.mountpoint, cl.container);
		status = SV_EXIT_USAGE;
		goto out;
	}
	if (mount_point(cl.mountpoint, &mnt))
		goto out;
	se = fuse_session_new(&args, &fs_ops, sizeof fs_ops, &fs);
	if (!se)
		goto out;
	fs.se = se;
	if (fuse_set_signal_handlers(se) != 0)
		goto out;
	if (fuse_session_mount(se, mnt) != 0) {
		fprintf(stderr, "savefs: cannot mount on %s\n", cl.mountpoint);
		goto out_signals;
	}
	if (!fo.foreground)
		sv_tree_before_fork(t);
	fuse_daemonize(fo.foreground);
	if (!fo.foreground)
		sv_tree_after_fork(t);
	/* Known to savefs mounts and savefs umount from now on. */
	char *loc = sv_tree_location(t);
	sv_mount_register(mnt, loc ? loc : cl.container, sv_tree_format(t),
			  o.read_only || sv_tree_read_only(t, SV_TREE_ROOT));
	free(loc);
	registered = true;
	if (fo.singlethread) {
		rc = fuse_session_loop(se);
	} else {
		struct fuse_loop_config *lc = fuse_loop_cfg_create();
		fuse_loop_cfg_set_clone_fd(lc, fo.clone_fd);
		fuse_loop_cfg_set_max_threads(lc, fo.max_threads ? fo.max_threads : 10);
		if (fo.max_idle_threads != UINT_MAX)
			fuse_loop_cfg_set_idle_threads(lc, fo.max_idle_threads);
		rc = fuse_session_loop_mt(se, lc);
		fuse_loop_cfg_destroy(lc);
	}
	/* A stop by SIGINT, SIGTERM or SIGHUP (the loop returns its number)
	 * is a clean one: unmounted, what is pending committed, exit 0. */
	bool stopped = rc == SIGINT || rc == SIGTERM || rc == SIGHUP || rc == -SIGINT ||
		       rc == -SIGTERM || rc == -SIGHUP;
	status = rc == 0 || stopped ? SV_EXIT_OK : SV_EXIT_MOUNT;
	/* The invalidation thread writes to the session's device: done with it
	 * before the unmount closes that. */
	fs_notify_stop(&fs);
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out:
	if (se)
		fuse_session_destroy(se); /* the last commit, at unmount */
	if (status == SV_EXIT_OK && __atomic_load_n(&fs.unwritten, __ATOMIC_RELAXED)) {
		fprintf(stderr, "savefs: %u edit(s) could not be written (see above)\n",
			fs.unwritten);
		status = SV_EXIT_UNWRITTEN;
	}
	if (registered)
		sv_mount_unregister(status, fs.report);
	sv_tree_free(t);
	free(mnt);
	free(fo.mountpoint);
	free(cl.container);
	free(cl.mountpoint);
	free(cl.extra);
	free(cl.cache);
	free(cl.format);
	free(cl.maxdecode);
	free(cl.maxedit);
	free(cl.readahead);
	free(cl.max_open);
	free(cl.spill);
	free(cl.format_opts);
	fuse_opt_free_args(&args);
	return status;
}
