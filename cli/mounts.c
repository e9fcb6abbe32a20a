/*
 * mounts.c - the mounts of this user: `savefs mounts` lists them and
 * `savefs umount` ends them, each daemon's last commits reported.
 *
 * The kernel's table (/proc/self/mountinfo) says where each savefs mount
 * is and what it mounts; a daemon says the rest in a note of its own in
 * the run directory (PID.json: its mount point, location, format and
 * mode), written when it starts serving and removed when it ends, so a
 * listing never asks a mount anything and a stuck daemon cannot hold it
 * up.  To unmount, `savefs umount` leaves an empty PID.report there, has
 * fusermount3 unmount, and waits for the daemon to end: a daemon that
 * finds its PID.report writes into it its exit status and what it could
 * not write, which the command then says.
 *
 * The run directory is $XDG_RUNTIME_DIR's place for this uid when there
 * is one (/run/user/UID/savefs), else /tmp/savefs-UID: found from the uid
 * alone, so that a daemon and a command started from different
 * environments agree.  It must be this user's own and closed to others.
 */
#include "cli.h"
#include "savefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the run directory --------------------------------------------------- */

int sv_run_dir(char *buf, size_t size)
{
	uid_t uid = getuid();
	char base[64];
	struct stat st;
	snprintf(base, sizeof base, "/run/user/%u", (unsigned)uid);
	if (!lstat(base, &st) && S_ISDIR(st.st_mode) && st.st_uid == uid)
		snprintf(buf, size, "%s/savefs", base);
	else
		snprintf(buf, size, "/tmp/savefs-%u", (unsigned)uid);
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(buf, &st))
		return -errno;
	/* Another user's, a link, or open to others: not trusted. */
	if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

static int run_file(char *buf, size_t size, long pid, const char *ext)
{
	char dir[PATH_MAX];
	int rc = sv_run_dir(dir, sizeof dir);
	if (rc)
		return rc;
	if ((size_t)snprintf(buf, size, "%s/%ld.%s", dir, pid, ext) >= size)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- the kernel's table ---------------------------------------------------- */

/* One field of a mountinfo line, its octal escapes (\040) undone, into
 * out; the rest of the line after it returned (NULL past the end). */
static char *field(char *p, char *out, size_t size)
{
	size_t k = 0;
	for (; *p && *p != ' ' && *p != '\n'; p++) {
		char c = *p;
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			c = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 3;
		}
		if (k + 1 < size)
			out[k++] = c;
	}
	out[k] = '\0';
	return *p == ' ' ? p + 1 : NULL;
}

/* The mounts of table `path` (a process's mountinfo). */
static int mounts_in(const char *path, int (*fn)(void *arg, const struct sv_mount *m), void *arg)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;
	while (!rc && getline(&line, &cap, f) > 0) {
		/* id parent major:minor root POINT options [optional...] - TYPE
		 * SOURCE SUPER-OPTIONS */
		struct sv_mount m;
		memset(&m, 0, sizeof m);
		char skip[64], opts[1024], super[1024];
		char *p = line;
		for (int i = 0; p && i < 4; i++)
			p = field(p, skip, sizeof skip);
		if (p)
			p = field(p, m.point, sizeof m.point);
		if (p)
			p = field(p, opts, sizeof opts);
		while (p && strncmp(p, "- ", 2))
			p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
		if (p)
			p = field(p + 2, m.type, sizeof m.type);
		if (p)
			p = field(p, m.source, sizeof m.source);
		if (!p)
			continue;
		field(p, super, sizeof super);
		m.ro = !strncmp(opts, "ro", 2) && (!opts[2] || opts[2] == ',');
		const char *u = strstr(super, "user_id=");
		m.uid = u ? (long)strtoul(u + 8, NULL, 10) : -1;
		rc = fn(arg, &m);
	}
	free(line);
	fclose(f);
	return rc;
}

int sv_mounts_each(int (*fn)(void *arg, const struct sv_mount *m), void *arg)
{
	return mounts_in("/proc/self/mountinfo", fn, arg);
}

static bool is_savefs(const struct sv_mount *m)
{
	return !strcmp(m->type, "fuse.savefs");
}

/* ---- the daemon's note ------------------------------------------------------- */

void sv_mount_register(const char *point, const char *location, const char *format, bool ro)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	if (run_file(path, sizeof path, (long)getpid(), "json"))
		return; /* a listing then shows what the kernel says alone */
	json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:b}", "mountpoint", point, "location", location,
			      "format", format, "pid", (json_int_t)getpid(), "read_only", ro);
	snprintf(tmp, sizeof tmp, "%s.new", path);
	if (o && !json_dump_file(o, tmp, JSON_COMPACT) && rename(tmp, path))
		unlink(tmp);
	json_decref(o);
}

void sv_mount_unregister(int status, const char *report)
{
	char path[PATH_MAX];
	long pid = (long)getpid();
	if (run_file(path, sizeof path, pid, "json"))
		return;
	unlink(path);
	/* Asked for a report (savefs umount): into the file it left. */
	if (run_file(path, sizeof path, pid, "report"))
		return;
	int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == getuid()) {
		FILE *f = fdopen(fd, "w");
		if (f) {
			fprintf(f, "%d\n%s", status, report ? report : "");
			fclose(f);
			return;
		}
	}
	close(fd);
}

/* What the note of the daemon serving mount point `point` says: 0 and
 * its fields, or -ENOENT. */
struct note {
	long pid;
	char format[64];
	bool ro, found;
};

static int find_note(const char *point, struct note *n)
{
	memset(n, 0, sizeof *n);
	char dir[PATH_MAX];
	if (sv_run_dir(dir, sizeof dir))
		return -ENOENT;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && !n->found && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
			continue;
		char path[PATH_MAX + 300];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		json_t *o = json_load_file(path, 0, NULL);
		const char *mp = json_string_value(json_object_get(o, "mountpoint"));
		long pid = (long)json_integer_value(json_object_get(o, "pid"));
		if (mp && !strcmp(mp, point) && pid > 0 && (!kill((pid_t)pid, 0) || errno == EPERM)) {
			const char *fmt = json_string_value(json_object_get(o, "format"));
			n->pid = pid;
			snprintf(n->format, sizeof n->format, "%s", fmt ? fmt : "-");
			n->ro = json_is_true(json_object_get(o, "read_only"));
			n->found = true;
		}
		json_decref(o);
	}
	if (d)
		closedir(d);
	return n->found ? 0 : -ENOENT;
}

/* ---- savefs mounts ------------------------------------------------------------ */

static int list_one(void *arg, const struct sv_mount *m)
{
	unsigned *count = arg;
	if (!is_savefs(m))
		return 0;
	struct note n;
	bool known = !find_note(m->point, &n);
	char pid[24] = "-";
	if (known)
		snprintf(pid, sizeof pid, "%ld", n.pid);
	printf("%s\t%s\t%s\t%s\t%s\n", m->point, m->source, known ? n.format : "-", pid,
	       m->ro || (known && n.ro) ? "ro" : "rw");
	(*count)++;
	return 0;
}

static int cmd_mounts(int argc, char **argv)
{
	if (argc) {
		fprintf(stderr, "savefs: mounts takes no argument (see savefs --help)\n");
		return SV_EXIT_USAGE;
	}
	unsigned count = 0;
	int rc = sv_mounts_each(list_one, &count);
	if (rc < 0) {
		fprintf(stderr, "savefs: cannot read /proc/self/mountinfo: %s\n", strerror(-rc));
		return SV_EXIT_FAIL;
	}
	return fflush(stdout) ? SV_EXIT_FAIL : SV_EXIT_OK;
}

/* ---- savefs umount ------------------------------------------------------------- */

/* The start time of process pid (field 22 of its stat), or 0 if it is
 * gone or ended: a pid reused meanwhile is another process. */
static unsigned long long started(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* past the name, which may hold spaces */
	if (p && (p[1] != ' ' || p[2] == 'Z' || p[2] == 'X'))
		return 0; /* ended, not yet reaped */
	unsigned long long t = 0;
	for (int i = 2; p && i < 22; i++)
		p = strchr(p + 1, ' ');
	if (p)
		t = strtoull(p + 1, NULL, 10);
	return t;
}

/* fusermount3 -u point: 0, or its exit status (it says why on stderr). */
static int fusermount(const char *point)
{
	fflush(NULL);
	pid_t child = fork();
	if (child < 0)
		return -1;
	if (!child) {
		execlp("fusermount3", "fusermount3", "-u", "--", point, (char *)NULL);
		fprintf(stderr, "savefs: cannot run fusermount3: %s\n", strerror(errno));
		_exit(127);
	}
	int ws;
	while (waitpid(child, &ws, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

static int same_point(void *arg, const struct sv_mount *m)
{
	return !strcmp(m->type, "fuse.savefs") && !strcmp(m->point, arg);
}

/* Unmounts m (a savefs mount): its daemon's report said, its status
 * returned. */
static int umount_one(const struct sv_mount *m)
{
	struct note n;
	bool known = !find_note(m->point, &n);
	char report[PATH_MAX];
	unsigned long long t0 = 0;
	if (known && !run_file(report, sizeof report, n.pid, "report")) {
		t0 = started(n.pid);
		int fd = open(report, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0)
			close(fd);
		else
			known = false;
	} else {
		known = false;
	}
	if (fusermount(m->point)) {
		if (known)
			unlink(report);
		fprintf(stderr, "savefs: %s: not unmounted\n", m->point);
		return SV_EXIT_FAIL;
	}
	/* Unmounted here, but mounted still where the daemon is (another
	 * mount namespace's copy was this one): the daemon goes on. */
	char table[64];
	snprintf(table, sizeof table, "/proc/%ld/mountinfo", known ? n.pid : 0L);
	if (known && mounts_in(table, same_point, (void *)m->point) > 0) {
		unlink(report);
		printf("%s: unmounted here (its daemon, pid %ld, serves it elsewhere still)\n",
		       m->point, n.pid);
		return SV_EXIT_OK;
	}
	if (!known) {
		printf("%s: unmounted (its daemon's note was not found: what it wrote last is in "
		       "its own log)\n", m->point);
		return SV_EXIT_OK;
	}
	/* Its last commits run after the unmount: waited for, however long
	 * they take (a client never waits for them otherwise). */
	bool said = false;
	for (unsigned i = 0; t0 && started(n.pid) == t0; i++) {
		if (i == 50 && !said) {
			fprintf(stderr, "savefs: %s: waiting for its daemon (pid %ld) to write what "
				"is pending\n", m->point, n.pid);
			said = true;
		}
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	FILE *f = fopen(report, "re");
	char line[4096];
	int status = -1;
	if (f && fgets(line, sizeof line, f))
		status = atoi(line);
	if (status < 0) {
		fprintf(stderr, "savefs: %s: unmounted, but its daemon (pid %ld) ended without a "
			"report: what it had pending may not be written\n", m->point, n.pid);
		status = SV_EXIT_FAIL;
	} else if (status) {
		fprintf(stderr, "savefs: %s: unmounted; its daemon ended with status %d:\n", m->point,
			status);
		while (fgets(line, sizeof line, f))
			fprintf(stderr, "  %s", line);
	} else {
		printf("%s: unmounted, every edit written\n", m->point);
	}
	if (f)
		fclose(f);
	unlink(report);
	return status;
}

struct umount_ctx {
	const char *point; /* the one asked for, or NULL: every one of this user */
	int status;
	unsigned done;
};

static int umount_each(void *arg, const struct sv_mount *m)
{
	struct umount_ctx *u = arg;
	if (!is_savefs(m))
		return 0;
	if (u->point ? strcmp(m->point, u->point) : m->uid != (long)getuid())
		return 0;
	int st = umount_one(m);
	if (st && (!u->status || u->status == SV_EXIT_FAIL))
		u->status = st;
	u->done++;
	return u->point ? 1 : 0;
}

static int cmd_umount(int argc, char **argv)
{
	bool all = argc == 1 && !strcmp(argv[0], "--all");
	if (!argc || (argc > 1 && !strcmp(argv[0], "--all"))) {
		fprintf(stderr, "savefs: umount takes MOUNTPOINT... or --all (see savefs --help)\n");
		return SV_EXIT_USAGE;
	}
	if (all) {
		struct umount_ctx u = {NULL, 0, 0};
		/* (The table changes as each goes: read again after each.) */
		for (unsigned before = ~0u; before != u.done;) {
			before = u.done;
			int rc = sv_mounts_each(umount_each, &u);
			if (rc < 0) {
				fprintf(stderr, "savefs: cannot read /proc/self/mountinfo: %s\n",
					strerror(-rc));
				return SV_EXIT_FAIL;
			}
			if (u.status)
				break; /* one that stays mounted would be tried again */
		}
		return u.status;
	}
	int status = 0;
	for (int i = 0; i < argc; i++) {
		/* A mount whose daemon is gone answers ENOTCONN: its path as
		 * given then, made absolute. */
		char *real = realpath(argv[i], NULL), cwd[PATH_MAX];
		if (!real && argv[i][0] != '/' && getcwd(cwd, sizeof cwd) &&
		    asprintf(&real, "%s/%s", cwd, argv[i]) < 0)
			real = NULL;
		else if (!real)
			real = strdup(argv[i]);
		struct umount_ctx u = {real, 0, 0};
		int rc = real ? sv_mounts_each(umount_each, &u) : -ENOMEM;
		if (rc < 0) {
			fprintf(stderr, "savefs: %s: %s\n", argv[i], strerror(-rc));
			u.status = SV_EXIT_FAIL;
		} else if (!u.done) {
			fprintf(stderr, "savefs: %s: not a savefs mount\n", argv[i]);
			u.status = SV_EXIT_PATH;
		}
		free(real);
		if (u.status && (!status || status == SV_EXIT_FAIL))
			status = u.status;
	}
	return status;
}

int sv_cli_mounts(const char *verb, int argc, char **argv)
{
	return !strcmp(verb, "mounts") ? cmd_mounts(argc, argv) : cmd_umount(argc, argv);
}
