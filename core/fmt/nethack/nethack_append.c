/*
 * nethack_append.c - writing to a live NetHack 4 log the game's way: its
 * lock files (the engine's files.c rules: a lock taken by creating it
 * exclusively, a stale one left by a dead process recognised), appends
 * checked line by line and refused whole if any line would not load, and
 * the log followed as the game appends to it.
 */
#include "nethack_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- locking (the game's rules; see files.c in the engine) ------------------------- */

/*
 * A running game holds a read lock on its log for its whole life.  A
 * writer asks the holders of conflicting locks to let go with
 * SIGRTMIN+0/+1 (sigqueue), each holder answers SIGRTMIN+4 once it has,
 * and the writer sends SIGRTMIN+2/+3 when it is done so that they lock
 * again.  savefs holds a lock only while it appends, so when asked it
 * answers at once (the asker retries until the append is over), and it
 * counts the answers to its own requests.
 */
static volatile sig_atomic_t acks;

static void on_rt(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	int k = sig - SIGRTMIN;
	if ((k == 0 || k == 1) && si && si->si_code == SI_QUEUE)
		sigqueue(si->si_pid, SIGRTMIN + 4, (union sigval){.sival_int = 0});
	else if (k == 4)
		acks = acks + 1;
}

static pthread_once_t signals_once = PTHREAD_ONCE_INIT;

static void install_once(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (int k = 0; k <= 4; k++) {
		struct sigaction old;
		/* Leave a handler someone else installed alone. */
		if (!sigaction(SIGRTMIN + k, NULL, &old) && old.sa_handler == SIG_DFL)
			sigaction(SIGRTMIN + k, &sa, NULL);
	}
}

void sv_nh_install_signals(void)
{
	pthread_once(&signals_once, install_once);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct locked {
	pid_t asked[16];
	int nasked;
};

/* Takes the whole file's write lock, asking holders to let go. */
static int lock_log(int fd, struct locked *lk, struct sv_err *err)
{
	int64_t deadline = now_ns() + LOCK_WAIT_NS;
	lk->nasked = 0;
	for (;;) {
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		if (!fcntl(fd, F_SETLK, &fl))
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EACCES)
			return sv_err_set(err, -errno, "cannot lock it: %s", strerror(errno));
		struct flock q = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		if (fcntl(fd, F_GETLK, &q))
			return sv_err_set(err, -errno, "cannot lock it: %s", strerror(errno));
		if (q.l_type == F_UNLCK)
			continue;
		if (now_ns() > deadline) {
			if (q.l_pid <= 0) /* an open file description's lock: no owner */
				return sv_err_set(err, -EBUSY, "another program holds a lock on it "
						  "and did not let go within 3 seconds: nothing "
						  "appended");
			return sv_err_set(err, -EBUSY, "process %d holds a lock on it and did "
					  "not let go within 3 seconds: nothing appended",
					  (int)q.l_pid);
		}
		if (q.l_type != F_RDLCK || q.l_pid <= 0) {
			/* Not a game's read lock: a holder that does not know the
			 * game's signals (they would kill it) is waited for. */
			nanosleep(&(struct timespec){0, 10000000}, NULL);
			continue;
		}
		bool known = false;
		for (int i = 0; i < lk->nasked; i++)
			known |= lk->asked[i] == q.l_pid;
		if (!known && lk->nasked < 16)
			lk->asked[lk->nasked++] = q.l_pid;
		sig_atomic_t before = acks;
		sigqueue(q.l_pid, q.l_pid < getpid() ? SIGRTMIN + 0 : SIGRTMIN + 1,
			 (union sigval){.sival_int = 0});
		/* Wait for the answer, a little. */
		for (int i = 0; i < 100 && acks == before; i++)
			nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
}

static void unlock_log(int fd, struct locked *lk)
{
	struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET};
	fcntl(fd, F_SETLK, &fl);
	for (int i = 0; i < lk->nasked; i++)
		sigqueue(lk->asked[i], lk->asked[i] < getpid() ? SIGRTMIN + 2 : SIGRTMIN + 3,
			 (union sigval){.sival_int = 0});
	lk->nasked = 0;
}

/*
 * The game's recovery, under the lock: the recovery count in line 1 goes
 * up by one and the file is cut at `at` (a line start), synced.  *count
 * receives the new count.  what names the operation in an error.
 */
static int recover_to(int fd, uint64_t at, uint32_t *count, const char *what,
		      struct sv_err *err)
{
	char line1[LINE1_LEN], status[5], version[16], hex[9];
	struct sv_err e;
	if (pread(fd, line1, LINE1_LEN, 0) != LINE1_LEN ||
	    sv_nh_parse_line1(line1, status, count, version, &e))
		return sv_err_set(err, -EIO, "its first line cannot be read");
	snprintf(hex, sizeof hex, "%08x", ++*count);
	if (pwrite(fd, hex, 8, COUNT_OFF) != 8 || ftruncate(fd, (off_t)at) || fdatasync(fd))
		return sv_err_set(err, -EIO, "%s: %s", what, strerror(errno));
	return 0;
}

/* Under the lock: a file that does not end with a newline is recovered
 * (count + 1, cut at its last newline), as the game would. */
static int recover_tail(int fd, struct nh *nh, uint64_t *size, bool *recovered,
			struct sv_err *err)
{
	*recovered = false;
	if (*size <= nh->end)
		return 0;
	char last;
	if (pread(fd, &last, 1, (off_t)*size - 1) != 1)
		return sv_err_set(err, -EIO, "cannot read its end");
	if (last == '\n')
		return 0;
	/* Find the last newline. */
	uint64_t at = *size;
	char blk[4096];
	while (at > 0) {
		size_t n = at < sizeof blk ? (size_t)at : sizeof blk;
		if (pread(fd, blk, n, (off_t)(at - n)) != (ssize_t)n)
			return sv_err_set(err, -EIO, "cannot read it");
		const char *nl = memrchr(blk, '\n', n);
		if (nl) {
			at = at - n + (uint64_t)(nl - blk) + 1;
			break;
		}
		at -= n;
	}
	uint32_t count;
	int rc = recover_to(fd, at, &count, "recovering its unfinished end", err);
	if (rc)
		return rc;
	*size = at;
	*recovered = true;
	return 0;
}

/* ---- appending ---------------------------------------------------------------------- */

/*
 * Checks lines p[0..n) (each ending in '\n') as the next lines of the log:
 * each parses as its kind, payloads decode, a diff applies to the state
 * before it with its CRC, a backup's number is the previous backup's
 * offset.  *state is the state before them (NULL: none yet) and receives
 * the state after them.
 */
static int check_lines(struct sv_container *c, struct nh *nh, const char *p, size_t n,
		       struct sv_blob **state, uint64_t *backup_off, struct sv_err *err)
{
	struct sv_buf tl, dec, out;
	sv_buf_init(&tl);
	sv_buf_init(&dec);
	sv_buf_init(&out);
	int rc = 0;
	uint64_t max = sv_container_opts(c)->max_decode;
	uint32_t line = nh->line;
	bool over = nh->over;
	uint64_t at = nh->end;
	for (size_t i = 0; i < n && !rc;) {
		const char *nl = memchr(p + i, '\n', n - i);
		size_t len = (size_t)(nl - (p + i));
		const char *s = p + i;
		line++;
		struct line_view l = {s, len, len, {len >= 2 ? s[len - 2] : 0, len ? s[len - 1] : 0}};
		enum kind kind;
		uint64_t delta;
		const char *why;
		if (over) {
			rc = sv_err_set(err, -EINVAL, "line %u: the game is over (a Q line): "
					"nothing can follow it", line);
			break;
		}
		sv_nh_transcript_line(line, 0, &l, NULL, &tl, NULL, &kind, &delta, NULL, &why);
		if (kind == K_BAD) {
			rc = sv_err_set(err, -EINVAL, "line %u: %s", line, why);
			break;
		}
		for (size_t j = 0; j < len; j++)
			if ((uint8_t)s[j] < 0x20 || (uint8_t)s[j] > 0x7e) {
				rc = sv_err_set(err, -EINVAL, "line %u: a control or non-ASCII "
						"byte", line);
				break;
			}
		if (rc)
			break;
		if (kind == K_GAMEOVER)
			over = true;
		struct sv_err pe;
		sv_err_clear(&pe);
		if (kind == K_BACKUP || kind == K_DIFF || (kind == K_BONES && len > 2)) {
			size_t skip = kind == K_BACKUP ? 10 : 1;
			dec.len = 0;
			rc = sv_nh_payload_decode(s + skip, len - skip, max, &dec, &pe);
			if (rc) {
				rc = sv_err_set(err, -EINVAL, "line %u: %s", line, pe.msg);
				break;
			}
		}
		if (kind == K_BACKUP) {
			uint64_t ptr = 0;
			sv_nh_parse_hex(s + 1, 8, &ptr);
			uint64_t want = *backup_off == UINT64_MAX ? at : *backup_off;
			if (ptr != want) {
				rc = sv_err_set(err, -EINVAL, "line %u: a backup's number must be "
						"the offset of the previous backup, %08llx, not %08llx",
						line, (unsigned long long)want, (unsigned long long)ptr);
				break;
			}
			struct sv_blob *b = sv_nh_buf_blob(&dec);
			if (!b) {
				rc = sv_err_set(err, -ENOMEM, "out of memory");
				break;
			}
			sv_blob_unref(*state);
			*state = b;
			*backup_off = at;
		} else if (kind == K_DIFF) {
			if (!*state) {
				rc = sv_err_set(err, -EINVAL, "line %u: a diff with no backup "
						"before it", line);
				break;
			}
			out.len = 0;
			struct nh_diff_result res;
			rc = sv_nh_diff_apply((*state)->data, (*state)->len, dec.p, dec.len, max, &out,
					   &res, &pe);
			if (rc) {
				rc = sv_err_set(err, -EINVAL, "line %u: the diff does not apply "
						"to the last save: %s", line, pe.msg);
				break;
			}
			struct sv_blob *b = sv_nh_buf_blob(&out);
			if (!b) {
				rc = sv_err_set(err, -ENOMEM, "out of memory");
				break;
			}
			sv_blob_unref(*state);
			*state = b;
		}
		at += len + 1;
		i += len + 1;
	}
	sv_buf_fini(&tl);
	sv_buf_fini(&dec);
	sv_buf_fini(&out);
	return rc;
}

/*
 * Writes p[0..n) at the file's real end, where `end` is believed to be
 * (lock held).  The kernel appends (RWF_APPEND), so a program that writes
 * without the lock is never written over.  If it wrote in the instant
 * since the size was checked, the lines land after its bytes: whole lines
 * after whole lines are kept (*moved is set: the state after them is not
 * the one checked), but lines glued to another program's unfinished line
 * are refused (EBUSY; the rescan shows what is there).  Nothing is ever
 * cut off, as that could cut another program's bytes.
 */
static int append_at_end(struct sv_container *c, int fd, uint64_t end, const char *p,
			 size_t n, bool *moved, struct sv_err *err)
{
	struct iovec iov = {(void *)p, n};
	bool appended = true;
	*moved = false;
	ssize_t k = pwritev2(fd, &iov, 1, -1, RWF_APPEND);
	if (k < 0 && (errno == EOPNOTSUPP || errno == EINVAL)) {
		appended = false; /* a kernel without RWF_APPEND */
		k = pwrite(fd, p, n, (off_t)end);
	}
	if (k != (ssize_t)n)
		return sv_err_set(err, -EIO, "appending: %s",
				  k < 0 ? strerror(errno) : "short write");
	off_t after = appended ? lseek(fd, 0, SEEK_CUR) : (off_t)(end + n);
	if (after == (off_t)(end + n))
		return 0;
	char before = 0;
	if (after < (off_t)n || pread(fd, &before, 1, after - (off_t)n - 1) != 1 || before != '\n')
		return sv_err_set(err, -EBUSY, "another program appended an unfinished line "
				  "at the same moment, without the game's lock: these lines "
				  "follow it (see the transcript)");
	sv_log(c, "another program appended at the same moment, without the game's "
	       "lock: these lines follow its lines");
	*moved = true;
	return 0;
}

/* Appends whole lines p[0..n) after checking them; the tree follows. */
static int append_lines(struct sv_container *c, struct nh *nh, const char *p, size_t n,
			struct sv_err *err)
{
	struct sv_blob *state = NULL;
	int rc = 0;
	if (nh->nents) {
		rc = sv_nh_state_of(c, nh, (uint32_t)nh->nents - 1, &state, err);
		if (rc) {
			rc = sv_err_set(err, -EINVAL, "the last save cannot be made (%s): "
					"nothing can be appended", err->msg);
			goto out;
		}
	}
	uint32_t last = sv_nh_last_backup(nh), first = sv_nh_first_backup(nh);
	uint64_t backup_off = last == UINT32_MAX ? UINT64_MAX : nh->ents[last].off;
	uint64_t new_backup = backup_off;
	rc = check_lines(c, nh, p, n, &state, &new_backup, err);
	if (rc)
		goto out;
	int fd = sv_container_fd(c);
	struct locked lk;
	rc = lock_log(fd, &lk, err);
	if (rc)
		goto out;
	struct stat st;
	uint64_t size = 0;
	bool recovered = false;
	if (fstat(fd, &st))
		rc = sv_err_set(err, -EIO, "%s", strerror(errno));
	else
		size = (uint64_t)st.st_size;
	if (!rc)
		rc = recover_tail(fd, nh, &size, &recovered, err);
	if (!rc && size != nh->end)
		rc = sv_err_set(err, -EBUSY, "another program wrote to it since it was "
				"read (%llu bytes, not %llu): nothing appended; the tree now shows "
				"its lines", (unsigned long long)size, (unsigned long long)nh->end);
	bool moved = false;
	if (!rc)
		rc = append_at_end(c, fd, nh->end, p, n, &moved, err);
	if (!rc && !moved && new_backup != backup_off && first != UINT32_MAX) {
		/* The first backup's number points at the latest backup. */
		char hex[9];
		snprintf(hex, sizeof hex, "%08llx", (unsigned long long)new_backup);
		if (pwrite(fd, hex, 8, (off_t)nh->ents[first].off + 1) != 8)
			sv_log(c, "cannot update the first backup's number: %s",
			       strerror(errno));
	}
	if (!rc && fdatasync(fd))
		rc = sv_err_set(err, -EIO, "fdatasync: %s", strerror(errno));
	unlock_log(fd, &lk);
	if (recovered) {
		/* Our own recovery: the count went up by one, nothing else. */
		nh->recovery++;
		sv_nh_make_header_views(nh);
		sv_nh_touch(c, nh->n_header, nh->json.len);
		sv_log(c, "recovered an unfinished end before appending "
		       "(recovery count now %u)", nh->recovery);
	}
	if (rc == -EBUSY) {
		struct sv_err e;
		sv_nh_scan_from(c, nh, true, &e);
		sv_nh_touch_all(c, nh);
		goto out;
	}
	if (rc)
		goto out;
	uint32_t first_new = (uint32_t)nh->nents;
	rc = sv_nh_scan_from(c, nh, true, err);
	if (!rc && nh->nents > first_new && state && !moved) {
		/* Keep the state the check made: the next append starts there. */
		pthread_mutex_lock(&nh->st_lock);
		sv_nh_keep_state(nh, -1, (uint32_t)nh->nents - 1, state);
		pthread_mutex_unlock(&nh->st_lock);
	}
	sv_nh_touch_all(c, nh);
out:
	sv_blob_unref(state);
	return rc;
}

int sv_nh_write(struct sv_container *c, uint32_t node, uint64_t off, const uint8_t *p,
		size_t n, struct sv_err *err)
{
	struct nh *nh = sv_container_priv(c);
	/* Appends and rewinds go on from the whole log's details. */
	int drc = sv_nh_details(c, nh, err);
	if (drc)
		return drc;
	if (node != nh->n_log)
		return sv_err_set(err, -EPERM, "this file is a read-only view");
	uint64_t at = sv_nh_log_size(nh);
	if (off == SV_AT_END)
		off = at;
	if (off != at)
		return sv_err_set(err, -EINVAL, "lines can only be appended: a write at "
				  "byte %llu, not at its end (byte %llu)", (unsigned long long)off,
				  (unsigned long long)at);
	if (!n)
		return 0;
	if (nh->partial.len + n > MAX_SMALL_LINE * 64ull || nh->partial.len + n < n) {
		nh->partial.len = 0;
		sv_nh_touch(c, nh->n_log, sv_nh_log_size(nh));
		return sv_err_set(err, -EFBIG, "a line that long cannot be appended");
	}
	const uint8_t *nl = memrchr(p, '\n', n);
	if (!nl) {
		if (sv_buf_add(&nh->partial, p, n))
			return sv_err_set(err, -ENOMEM, "out of memory");
		sv_nh_touch(c, nh->n_log, sv_nh_log_size(nh));
		return 0;
	}
	size_t whole = (size_t)(nl - p) + 1;
	struct sv_buf lines;
	sv_buf_init(&lines);
	int rc = 0;
	if (sv_buf_add(&lines, nh->partial.p ? nh->partial.p : (uint8_t *)"", nh->partial.len) ||
	    sv_buf_add(&lines, p, whole)) {
		rc = sv_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	nh->partial.len = 0;
	rc = append_lines(c, nh, (const char *)lines.p, lines.len, err);
	if (!rc && whole < n && sv_buf_add(&nh->partial, p + whole, n - whole))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	sv_nh_touch(c, nh->n_log, sv_nh_log_size(nh));
out:
	sv_buf_fini(&lines);
	return rc;
}

int sv_nh_sync(struct sv_container *c, uint32_t node, struct sv_err *err)
{
	struct nh *nh = sv_container_priv(c);
	if (node != nh->n_log || !nh->partial.len)
		return 0;
	size_t n = nh->partial.len;
	nh->partial.len = 0;
	sv_nh_touch(c, nh->n_log, sv_nh_log_size(nh));
	return sv_err_set(err, -EINVAL, "%zu bytes without a newline at the end: only "
			  "whole lines are appended, these were not", n);
}

/* Rewinds: truncating the log to the start of a body line is the game's
 * recovery (count + 1, the file cut there). */
int sv_nh_truncate(struct sv_container *c, uint32_t node, uint64_t size,
		   struct sv_err *err)
{
	struct nh *nh = sv_container_priv(c);
	/* Appends and rewinds go on from the whole log's details. */
	int drc = sv_nh_details(c, nh, err);
	if (drc)
		return drc;
	if (node != nh->n_log)
		return sv_err_set(err, -EPERM, "this file is a read-only view");
	if (size == sv_nh_log_size(nh))
		return 0;
	if (size == nh->end) {
		nh->partial.len = 0; /* the unfinished line goes */
		sv_nh_touch(c, nh->n_log, sv_nh_log_size(nh));
		return 0;
	}
	int fd = sv_container_fd(c);
	char before = 0;
	uint32_t first = sv_nh_first_backup(nh);
	uint64_t keep = first == UINT32_MAX ? nh->hdr_end
					    : nh->ents[first].off + sv_nh_ent_len(c, &nh->ents[first]) + 1;
	if (size > nh->end || size < keep || pread(fd, &before, 1, (off_t)size - 1) != 1 ||
	    before != '\n')
		return sv_err_set(err, -EINVAL, "%llu is not the start of a line after the "
				  "first backup (byte %llu on): a log can only be rewound to the "
				  "start of one of its lines", (unsigned long long)size,
				  (unsigned long long)keep);
	struct locked lk;
	int rc = lock_log(fd, &lk, err);
	if (rc)
		return rc;
	struct stat st;
	uint32_t count = 0;
	if (fstat(fd, &st))
		rc = sv_err_set(err, -EIO, "%s", strerror(errno));
	else if ((uint64_t)st.st_size != nh->end + nh->torn)
		rc = sv_err_set(err, -EBUSY, "another program wrote to it since it was "
				"read: not rewound");
	else
		rc = recover_to(fd, size, &count, "rewinding", err);
	unlock_log(fd, &lk);
	if (rc)
		return rc;
	sv_log(c, "rewound to byte %llu (recovery count now %u)", (unsigned long long)size,
	       count);
	return 1;
}

/* Another program changed the log: a new recovery count means start over;
 * new lines are scanned; a rewritten status line is shown. */
int sv_nh_refresh(struct sv_container *c, struct sv_err *err)
{
	struct nh *nh = sv_container_priv(c);
	/* Appends and rewinds go on from the whole log's details. */
	int drc = sv_nh_details(c, nh, err);
	if (drc)
		return drc;
	int fd = sv_container_fd(c);
	char head[LINE1_LEN + LINE2_LEN];
	char status[5], version[16];
	uint32_t count;
	struct sv_err e;
	if (pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
	    sv_nh_parse_line1(head, status, &count, version, &e))
		return 1;
	struct stat st;
	if (fstat(fd, &st))
		return sv_err_set(err, -EIO, "%s", strerror(errno));
	if (count != nh->recovery || (uint64_t)st.st_size < nh->end)
		return 1;
	bool header = strcmp(status, nh->status) ||
		      memcmp(head + LINE1_LEN, nh->statusline, LINE2_LEN - 1);
	if (header) {
		memcpy(nh->status, status, 5);
		if (head[LINE1_LEN + LINE2_LEN - 1] == '\n') {
			memcpy(nh->statusline, head + LINE1_LEN, LINE2_LEN - 1);
			for (int i = 0; i < LINE2_LEN - 1; i++)
				if ((uint8_t)nh->statusline[i] < 0x20 || (uint8_t)nh->statusline[i] > 0x7e)
					nh->statusline[i] = '?';
		}
		sv_nh_make_header_views(nh);
		sv_nh_touch(c, nh->n_header, nh->json.len);
	}
	uint64_t end = nh->end;
	int rc = sv_nh_scan_from(c, nh, true, err);
	if (rc)
		return rc;
	if (nh->end != end && nh->partial.len) {
		sv_log(c, "another program appended lines: the unfinished line written "
		       "here (%zu bytes) was dropped", nh->partial.len);
		nh->partial.len = 0;
	}
	if (nh->end != end || header)
		sv_nh_touch_all(c, nh);
	return 0;
}
