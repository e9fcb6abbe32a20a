/*
 * nethack_index.c - a NetHack log's scan kept in the persistent index:
 * stored after a scan, and at the next open taken instead of a scan when
 * the log is the one scanned (checked against its identity), or scanned on
 * from where the kept one ended when the game appended since.
 */
#include "nethack_priv.h"

/* ---- the scan kept in the persistent index ---------------------------------------- */

/* The entry table's bytes in the record, padded so that the checkpoints
 * after it are aligned. */
#define ENTS_BYTES(n) (((uint64_t)(n) * sizeof(struct ent) + 7) & ~(uint64_t)7)
struct scan_rec {
	uint64_t hdr_end, end, time, tbody, nents, nck, nwarn_ent, nwarn_det;
	uint32_t line, over;
	uint32_t kinds[16];
};

void sv_nh_scan_store(struct sv_container *c, const struct nh *nh, const struct sv_buf *ent_warns,
		      const struct sv_buf *det_warns)
{
	struct scan_rec r = {nh->hdr_end, nh->end, nh->time, nh->tbody, nh->nents, nh->nck,
			     ent_warns->len, det_warns->len, nh->line, nh->over, {0}};
	memcpy(r.kinds, nh->kinds, sizeof r.kinds);
	static const uint8_t pad[8];
	struct iovec v[6] = {{&r, sizeof r},
			     {nh->ents, nh->nents * sizeof *nh->ents},
			     {(void *)pad, ENTS_BYTES(nh->nents) - nh->nents * sizeof *nh->ents},
			     {nh->ck, nh->nck * sizeof *nh->ck},
			     {ent_warns->p, ent_warns->len},
			     {det_warns->p, det_warns->len}};
	sv_container_index_storev(c, "scan", SCAN_INDEX, v, 6);
}

/* NUL-ended strings, the last one ended. */
static bool strings_ok(const uint8_t *p, uint64_t n)
{
	return !n || p[n - 1] == '\0';
}

/* The scan as kept: true if the record is whole and agrees with itself
 * and with the log's header (then nh holds it, its details' warnings
 * said when they are first needed, as after a scan), else false (nh as it
 * was: the log is scanned). */
static bool scan_recall(struct sv_container *c, struct nh *nh, const struct sv_blob *kept)
{
	struct scan_rec r;
	if (kept->len < sizeof r)
		return false;
	memcpy(&r, kept->data, sizeof r);
	uint64_t size = sv_container_size(c);
	if (r.hdr_end != nh->hdr_end || r.end > size || r.end < r.hdr_end ||
	    r.nents > UINT32_MAX - 1 || r.nck > r.end || r.nwarn_ent > kept->len ||
	    r.nwarn_det > kept->len ||
	    kept->len != sizeof r + ENTS_BYTES(r.nents) + r.nck * sizeof *nh->ck +
				 r.nwarn_ent + r.nwarn_det)
		return false;
	const uint8_t *p = kept->data + sizeof r;
	const struct ent *ents = (const struct ent *)p;
	p += ENTS_BYTES(r.nents);
	const struct ck *ck = (const struct ck *)p;
	p += r.nck * sizeof *ck;
	const uint8_t *det = p + r.nwarn_ent;
	bool ok = strings_ok(p, r.nwarn_ent) && strings_ok(det, r.nwarn_det) &&
		  !sv_buf_add(&nh->det_warns, det, (size_t)r.nwarn_det);
	uint64_t backups = 0;
	uint32_t *bk = NULL;
	size_t nbk = 0, capbk = 0;
	for (size_t i = 0; ok && i < r.nents; i++) {
		ok = ents[i].off >= r.hdr_end && ents[i].len <= r.end - ents[i].off &&
		     ents[i].line <= r.line;
		backups += ents[i].backup;
		if (ok && ents[i].backup && !ents[i].bad) {
			ok = !sv_grow((void **)&bk, &capbk, nbk + 1, sizeof *bk);
			if (ok)
				bk[nbk++] = (uint32_t)i;
		}
	}
	for (size_t i = 0; ok && i < r.nck; i++)
		ok = ck[i].off <= r.end && ck[i].toff <= r.tbody;
	if (!ok) {
		free(bk);
		sv_buf_fini(&nh->det_warns);
		return false;
	}
	free(nh->bk);
	nh->bk = bk;
	nh->nbk = nbk;
	nh->capbk = capbk;
	/* Read in place from the record, which nh keeps. */
	if (!nh->kept) {
		sv_tab_free(nh->ents);
		free(nh->ck);
	}
	sv_blob_unref(nh->kept);
	nh->kept = sv_blob_ref((struct sv_blob *)kept);
	nh->ents = (struct ent *)(kept->data + sizeof r);
	nh->nents = nh->capents = r.nents;
	nh->nbackups = backups;
	nh->ck = (struct ck *)(kept->data + sizeof r + ENTS_BYTES(r.nents));
	nh->nck = nh->capck = r.nck;
	nh->end = nh->det_end = r.end;
	nh->time = r.time;
	nh->tbody = r.tbody;
	nh->line = r.line;
	nh->over = r.over;
	memcpy(nh->kinds, r.kinds, sizeof nh->kinds);
	nh->torn = size - r.end;
	for (const char *w = (const char *)p; w < (const char *)det; w += strlen(w) + 1)
		sv_warn(c, "%s", w);
	nh->detailed = true;
	return true;
}

/* The open's scan: kept from an earlier mount of the very same file, or
 * the entries found now (the details wait for their first need, and then
 * keep the record). */
static void check_first_pointer(struct sv_container *c, struct nh *nh);

/* The end of the last complete line of [from, size) of fd (from if it has
 * none), read backwards from the end; -EIO. */
static int last_line_end(struct sv_container *c, uint64_t from, uint64_t size, uint64_t *end)
{
	uint8_t win[65536];
	uint64_t hi = size;
	while (hi > from) {
		uint64_t lo = hi - from > sizeof win ? hi - sizeof win : from;
		ssize_t k = sv_nh_pread(c, win, (size_t)(hi - lo), lo);
		if (k != (ssize_t)(hi - lo))
			return -EIO;
		const uint8_t *nl = memrchr(win, '\n', (size_t)k);
		if (nl) {
			*end = lo + (uint64_t)(nl - win) + 1;
			return 0;
		}
		hi = lo;
	}
	*end = from;
	return 0;
}

int sv_nh_ready(struct sv_container *c, struct nh *nh, struct sv_err *err)
{
	if (__atomic_load_n(&nh->scanned, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&nh->scan_lock);
	int rc = 0;
	if (!nh->scanned) {
		rc = sv_nh_scan_entries(c, nh, &nh->ent_warns, nh->scan_to, err);
		if (!rc) {
			check_first_pointer(c, nh);
			__atomic_store_n(&nh->scanned, true, __ATOMIC_RELEASE);
		} else {
			/* Nothing kept of a scan that failed: the next need
			 * starts it again from the header. */
			nh->nents = nh->nbackups = nh->nbk = 0;
			nh->end = nh->det_end = nh->hdr_end;
			nh->line = 3;
			nh->torn = nh->scan_torn;
			sv_buf_fini(&nh->ent_warns);
		}
	}
	pthread_mutex_unlock(&nh->scan_lock);
	return rc;
}

int sv_nh_scan_all(struct sv_container *c, struct nh *nh, struct sv_err *err)
{
	struct sv_blob *kept = NULL;
	int rc = 0;
	if (!sv_container_index_load(c, "scan", SCAN_INDEX, &kept)) {
		bool ok = scan_recall(c, nh, kept);
		sv_blob_unref(kept);
		if (ok)
			goto scanned;
	}
	uint64_t size = sv_container_size(c);
	if (size > SCAN_LATER) {
		/* Found at the first need: the open knows where the last
		 * complete line ends (the log's size) and what is torn. */
		rc = last_line_end(c, nh->end, size, &nh->scan_to);
		if (rc)
			return sv_err_set(err, rc, "nethack: cannot read the end of the log: %s",
					  strerror(errno));
		nh->torn = nh->scan_torn = size - nh->scan_to;
		return 0;
	}
	rc = sv_nh_scan_entries(c, nh, &nh->ent_warns, UINT64_MAX, err);
	if (rc)
		return rc;
scanned:
	check_first_pointer(c, nh);
	nh->scanned = true;
	return 0;
}

static void check_first_pointer(struct sv_container *c, struct nh *nh)
{
	uint32_t first = sv_nh_first_backup(nh), last = sv_nh_last_backup(nh);
	if (first == UINT32_MAX)
		return;
	struct ent *f = &nh->ents[first];
	char hex[8];
	uint64_t ptr;
	if (sv_nh_pread(c, hex, 8, (uint64_t)f->off + 1) != 8 || !sv_nh_parse_hex(hex, 8, &ptr))
		return;
	uint64_t latest = nh->ents[last].off;
	if (ptr != latest)
		sv_warn(c, "nethack: line %u: the first backup's number %08llx does not point at "
			"the latest backup (line %u, byte %llu): only a hint, not followed",
			f->line, (unsigned long long)ptr, nh->ents[last].line,
			(unsigned long long)latest);
}
