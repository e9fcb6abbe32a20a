/*
 * nethack_read.c - a NetHack 4 log's files made as they are read: the
 * log itself, the transcript (in pieces, from the nearest checkpoint),
 * backups and diffs decoded, and game states rebuilt from the latest
 * backup before them with the diffs after it (the last state that could
 * not be made remembered, so its successors fail without decoding again).
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

/* ---- reading ---------------------------------------------------------------------- */

/* Decodes the payload of entry e into out. */
static int ent_payload(struct sv_container *c, const struct ent *e, struct sv_buf *out,
		       struct sv_err *err)
{
	if (e->bad)
		return sv_err_set(err, -EBADMSG, "line %u is malformed (see /.savefs/info)",
				  e->line);
	size_t skip = e->backup ? 10 : 1;
	uint64_t max = sv_container_opts(c)->max_decode, len = sv_nh_ent_len(c, e);
	if (len == UINT64_MAX)
		return sv_err_set(err, -EIO, "line %u: cannot read it", e->line);
	if (len > max * 2 + 64)
		return sv_err_set(err, -EFBIG, "line %u: %llu bytes: more than the decode limit",
				  e->line, (unsigned long long)len);
	char *text = malloc((size_t)len);
	if (!text)
		return sv_err_set(err, -ENOMEM, "out of memory");
	int rc = 0;
	if (sv_nh_pread(c, text, (size_t)len, (uint64_t)e->off) != (ssize_t)len)
		rc = sv_err_set(err, -EIO, "line %u: cannot read it", e->line);
	struct sv_err pe;
	sv_err_clear(&pe);
	if (!rc && (rc = sv_nh_payload_decode(text + skip, (size_t)len - skip, max, out, &pe)))
		sv_err_set(err, rc, "line %u: %s", e->line, pe.msg);
	free(text);
	return rc;
}

struct sv_blob *sv_nh_buf_blob(struct sv_buf *b)
{
	return sv_blob_dup(b->p ? b->p : (uint8_t *)"", b->len);
}

uint64_t sv_nh_diffs_applied;

/* Applies the diff of entry j to cur, replacing it. */
static int apply_ent(struct sv_container *c, const struct ent *e, struct sv_blob **cur,
		     struct sv_err *err)
{
	struct sv_buf d, out;
	sv_buf_init(&d);
	sv_buf_init(&out);
	__atomic_add_fetch(&sv_nh_diffs_applied, 1, __ATOMIC_RELAXED);
	int rc = ent_payload(c, e, &d, err);
	struct sv_err de;
	sv_err_clear(&de);
	if (!rc && (rc = sv_nh_diff_apply((*cur)->data, (*cur)->len, d.p, d.len,
				       sv_container_opts(c)->max_decode, &out, NULL, &de)))
		sv_err_set(err, rc, "line %u: %s", e->line, de.msg);
	if (!rc) {
		struct sv_blob *b = sv_nh_buf_blob(&out);
		if (!b) {
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		} else {
			sv_blob_unref(*cur);
			*cur = b;
		}
	}
	sv_buf_fini(&d);
	sv_buf_fini(&out);
	return rc;
}

void sv_nh_keep_state(struct nh *nh, int from, uint32_t ent, struct sv_blob *blob)
{
	if (from < 0) {
		from = 0;
		for (int j = 1; j < ST_KEPT; j++)
			if (nh->st[j].used < nh->st[from].used)
				from = j;
	}
	struct nh_state *t = &nh->st[from];
	if (t->blob != blob) {
		sv_blob_unref(t->blob);
		t->blob = sv_blob_ref(blob);
	}
	t->ent = ent;
	t->used = ++nh->st_clock;
}

/* The save after entry k: from the kept state when it is on the way,
 * else from k's backup.  Keeps the result. */
int sv_nh_state_of(struct sv_container *c, struct nh *nh, uint32_t k, struct sv_blob **out,
		   struct sv_err *err)
{
	if (k >= nh->nents)
		return sv_err_set(err, -ENOENT, "no such line");
	const struct ent *e = &nh->ents[k];
	uint32_t b = sv_nh_base(nh, k);
	if (b == UINT32_MAX)
		return sv_err_set(err, -EBADMSG, "line %u: a diff with no backup before it",
				  e->line);
	pthread_mutex_lock(&nh->st_lock);
	struct sv_blob *cur = NULL;
	uint32_t at;
	int rc = 0;
	if (nh->fail_ent != UINT32_MAX && nh->fail_ent >= b && nh->fail_ent <= k &&
	    (nh->fail_base == UINT32_MAX || nh->fail_base == b)) {
		*err = nh->fail_err;
		pthread_mutex_unlock(&nh->st_lock);
		return err->code;
	}
	/* The kept state nearest before k on its way from b, if any. */
	int from = -1;
	for (int j = 0; j < ST_KEPT; j++) {
		const struct nh_state *t = &nh->st[j];
		if (t->blob && t->ent >= b && t->ent <= k && t->ent < nh->nents &&
		    (from < 0 || t->ent > nh->st[from].ent))
			from = j;
	}
	if (from >= 0) {
		cur = sv_blob_ref(nh->st[from].blob);
		at = nh->st[from].ent;
	} else {
		struct sv_buf s;
		sv_buf_init(&s);
		rc = ent_payload(c, &nh->ents[b], &s, err);
		if (!rc && !(cur = sv_nh_buf_blob(&s)))
			rc = sv_err_set(err, -ENOMEM, "out of memory");
		sv_buf_fini(&s);
		at = b;
	}
	uint32_t j = at;
	for (; !rc && j < k; j++)
		rc = apply_ent(c, &nh->ents[j + 1], &cur, err);
	if (rc && rc != -ENOMEM && rc != -EIO) {
		/* Remembered: the line itself, or its diff on this way. */
		bool own = j == b || nh->ents[j].bad;
		nh->fail_ent = j;
		nh->fail_base = own ? UINT32_MAX : b;
		nh->fail_err = *err;
		nh->fail_err.code = rc;
	}
	if (!rc) {
		/* A reader going on (a few lines on) moves its kept state
		 * along; one that jumped keeps the state it jumped from. */
		sv_nh_keep_state(nh, from >= 0 && k - at <= 16 ? from : -1, k, cur);
		*out = cur;
	} else {
		sv_blob_unref(cur);
	}
	pthread_mutex_unlock(&nh->st_lock);
	return rc;
}

int sv_nh_load(struct sv_container *c, uint32_t node, struct sv_blob **out,
	       struct sv_err *err)
{
	struct nh *nh = sv_container_priv(c);
	struct sv_node *n = sv_node(c, node);
	uint64_t key = n->key;
	if (key == KEY_HEADER) {
		*out = sv_nh_buf_blob(&nh->json);
		return *out ? 0 : sv_err_set(err, -ENOMEM, "out of memory");
	}
	int ready = sv_nh_ready(c, nh, err);
	if (ready)
		return ready;
	uint32_t t = (uint32_t)(key >> 32), i = (uint32_t)key;
	if (i >= nh->nents)
		return sv_err_set(err, -ENOENT, "no such line");
	if (t == T_STATE)
		return sv_nh_state_of(c, nh, i, out, err);
	struct sv_buf b;
	sv_buf_init(&b);
	int rc = ent_payload(c, &nh->ents[i], &b, err);
	if (!rc && !(*out = sv_nh_buf_blob(&b)))
		rc = sv_err_set(err, -ENOMEM, "out of memory");
	sv_buf_fini(&b);
	return rc;
}

struct tgen {
	char *dst;          /* the reader's buffer */
	uint64_t want_off;  /* body offset of dst[0] */
	size_t size, got;
	uint64_t toff;      /* body offset of the next line */
	uint64_t time;
	uint32_t line;
	struct sv_buf tl, content;
	struct iso_cache ic;
};

static int tgen_line(void *arg, uint64_t off, const struct line_view *l)
{
	struct tgen *g = arg;
	enum kind kind;
	uint64_t delta;
	const char *why;
	g->line++;
	sv_nh_transcript_line(g->line, g->time, l, &g->tl, &g->content, &g->ic, &kind, &delta, NULL,
			&why);
	g->time += delta;
	if (g->time < delta)
		g->time = UINT64_MAX;
	uint64_t a = g->toff, z = a + g->tl.len;
	uint64_t from = g->want_off + g->got;
	if (z > from) {
		size_t skip = (size_t)(from - a);
		size_t k = g->tl.len - skip;
		if (k > g->size - g->got)
			k = g->size - g->got;
		memcpy(g->dst + g->got, g->tl.p + skip, k);
		g->got += k;
	}
	g->toff = z;
	return g->got == g->size;
}

static int read_transcript(struct sv_container *c, struct nh *nh, uint64_t off, char *buf,
			   size_t size, size_t *got, struct sv_err *err)
{
	uint64_t total = nh->thead.len + nh->tbody;
	*got = 0;
	if (off >= total || !size)
		return 0;
	if (size > total - off)
		size = (size_t)(total - off);
	if (off < nh->thead.len) {
		size_t k = nh->thead.len - (size_t)off;
		if (k > size)
			k = size;
		memcpy(buf, nh->thead.p + off, k);
		*got = k;
		if (k == size)
			return 0;
	}
	uint64_t boff = off + *got - nh->thead.len;
	/* The last checkpoint at or before boff. */
	size_t lo = 0, hi = nh->nck;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (nh->ck[mid].toff <= boff)
			lo = mid;
		else
			hi = mid;
	}
	if (!nh->nck)
		return 0;
	struct ck *k = &nh->ck[lo];
	struct tgen g = {buf + *got, boff, size - *got, 0, k->toff, k->time, k->line - 1,
			 {0}, {0}, {0}};
	uint64_t end;
	/* A piece of the transcript needs at most CK_EVERY lines before it. */
	int rc = sv_nh_each_line(c, k->off, nh->end, TBLOCK, tgen_line, &g, &end, err);
	sv_buf_fini(&g.tl);
	sv_buf_fini(&g.content);
	*got += g.got;
	return rc;
}

int sv_nh_size(struct sv_container *c, uint32_t node, uint64_t *size, struct sv_err *err)
{
	struct nh *nh = sv_container_priv(c);
	if (sv_node(c, node)->key != KEY_TRANSCRIPT)
		return sv_err_set(err, -EIO, "no size of its own");
	int rc = sv_nh_details(c, nh, err);
	if (!rc)
		*size = nh->thead.len + nh->tbody;
	return rc;
}

int sv_nh_read(struct sv_container *c, uint32_t node, uint64_t off, void *buf,
	       size_t size, size_t *got, struct sv_err *err)
{
	struct nh *nh = sv_container_priv(c);
	uint64_t key = sv_node(c, node)->key;
	*got = 0;
	int ready = sv_nh_ready(c, nh, err);
	if (ready)
		return ready;
	if (key == KEY_TRANSCRIPT) {
		int rc = sv_nh_details(c, nh, err);
		return rc ? rc : read_transcript(c, nh, off, buf, size, got, err);
	}
	if (key != KEY_LOG)
		return sv_err_set(err, -EIO, "not a stream");
	uint64_t total = sv_nh_log_size(nh);
	if (off >= total)
		return 0;
	if (size > total - off)
		size = (size_t)(total - off);
	size_t from_file = off < nh->end ? (size_t)(nh->end - off < size ? nh->end - off : size) : 0;
	size_t done = 0;
	while (done < from_file) {
		ssize_t k = sv_nh_pread(c, (char *)buf + done, from_file - done,
				  (off_t)(off + done));
		if (k <= 0)
			return sv_err_set(err, -EIO, "cannot read byte %llu",
					  (unsigned long long)(off + done));
		done += (size_t)k;
	}
	if (done < size) {
		/* The unfinished line of an append in progress. */
		uint64_t p = off + done - nh->end;
		memcpy((char *)buf + done, nh->partial.p + p, size - done);
		done = size;
	}
	*got = done;
	return 0;
}
