/*
 * source/source.h - where a container's bytes come from, as formats read
 * them.  (The interface the sources implement follows in this header.)
 */
#ifndef SV_SOURCE_H
#define SV_SOURCE_H

#include "savefs.h"

#include <sys/stat.h>

/* The container's size in bytes as opened. */
uint64_t sv_container_size(const struct sv_container *c);
/* Reads exactly n bytes at off from the container file.  -EBADMSG with a
 * reason if the range lies outside the file, -EIO if the host fails. */
int sv_container_pread(struct sv_container *c, uint64_t off, void *buf,
		       size_t n, struct sv_err *err);
/* The open file descriptor of the container (for copying stored bytes);
 * of a directory container, the directory. */
int sv_container_fd(const struct sv_container *c);

/*
 * Containers that are directories (a recording being written: a preamble
 * and segments).  Members are regular files directly inside it, named
 * without '/'; a symbolic link is refused (-EBADMSG).  Each call opens the
 * member afresh, so a member replaced by rename is seen whole, old or new.
 * Thread-safe.
 */
bool sv_container_is_dir(const struct sv_container *c);
/* Stats a member: -ENOENT if it is not there, -EBADMSG if not a file. */
int sv_member_stat(struct sv_container *c, const char *name, struct stat *st,
		   struct sv_err *err);
/* Reads exactly n bytes at off of a member: -EBADMSG past its end. */
int sv_member_pread(struct sv_container *c, const char *name, uint64_t off, void *buf,
		    size_t n, struct sv_err *err);
/* Appends a whole member to out: -EFBIG if it is larger than max. */
int sv_member_read_all(struct sv_container *c, const char *name, uint64_t max,
		       struct sv_buf *out, struct sv_err *err);
/* Calls fn with each entry's name (not "." or ".."), in no order, until
 * it returns non-zero (which is returned). */
int sv_member_list(struct sv_container *c, int (*fn)(void *arg, const char *name),
		   void *arg, struct sv_err *err);
/* Replaces (or creates) a member with p[0..n): written to
 * "<tmp_prefix>XXXXXXXX.tmp" in the directory, synced, renamed over it,
 * and the directory synced: a crash leaves the old member or the new one
 * (and perhaps the temporary file).  With `expect` (the member as read),
 * the two are exchanged atomically and, if what was exchanged out is not
 * that file (another writer replaced it meanwhile), exchanged back:
 * -EBUSY, nothing of the other writer's lost.  Test steps
 * "member-written", "member-renamed". */
int sv_member_replace(struct sv_container *c, const char *name, const char *tmp_prefix,
		      const void *p, size_t n, const struct stat *expect, struct sv_err *err);

#endif
