/*
 * nethack_scan.c - the NetHack log scanned: its header lines, then every
 * line once (large reads, newlines found 64 bytes at a time; a big log by
 * two threads, one per half, merged), into the entry table, the
 * transcript's checkpoints and the warnings.
 */
#include "nethack_priv.h"

static const char *const mode_names[4] = {"normal", "explore", "wizard", "set-seed"};

/* ---- the header ------------------------------------------------------------------ */

static int header_fail(struct sv_err *err, int line, uint64_t off, const char *what)
{
	return sv_err_set(err, -EBADMSG, "nethack: line %d (byte %llu): %s", line,
			  (unsigned long long)off, what);
}

static bool word3(const char *s, size_t n, char out[4])
{
	if (n != 3)
		return false;
	for (size_t i = 0; i < 3; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return false;
	memcpy(out, s, 3);
	out[3] = '\0';
	return true;
}

/* Parses line 1 (exactly LINE1_LEN bytes with its newline). */
int sv_nh_parse_line1(const char *p, char status[5], uint32_t *count, char version[16],
		      struct sv_err *err)
{
	uint64_t v;
	if (memcmp(p, "NHGAME ", 7) || p[11] != ' ' || p[20] != ' ' || p[30] != '\n')
		return header_fail(err, 1, 0, "not \"NHGAME <status> <count> <version>\" "
					      "in 31 bytes");
	if (memcmp(p + 7, "save", 4) && memcmp(p + 7, "done", 4))
		return header_fail(err, 1, 7, "the status is neither \"save\" nor \"done\"");
	if (!sv_nh_parse_hex(p + COUNT_OFF, 8, &v))
		return header_fail(err, 1, COUNT_OFF, "the recovery count is not 8 hex digits");
	for (int i = 21; i < 30; i++)
		if ((uint8_t)p[i] <= 0x20 || (uint8_t)p[i] > 0x7e)
			return header_fail(err, 1, 21, "the version is not 9 printable characters");
	memcpy(status, p + 7, 4);
	status[4] = '\0';
	*count = (uint32_t)v;
	memcpy(version, p + 21, 9);
	version[9] = '\0';
	return 0;
}

void sv_nh_make_header_views(struct nh *nh)
{
	char ts[28];
	sv_nh_iso_time(nh->start, ts);
	const char *sl = nh->statusline;
	while (*sl == ' ')
		sl++;
	nh->thead.len = 0;
	sv_buf_printf(&nh->thead, "%06u %s %-8s %s, recovery count %u, version %s\n", 1, ts,
		      "header", nh->status, nh->recovery, nh->version);
	sv_buf_printf(&nh->thead, "%06u %s %-8s ", 2, ts, "status");
	sv_nh_add_quoted(&nh->thead, (const uint8_t *)sl, strlen(sl));
	sv_buf_printf(&nh->thead, "\n%06u %s %-8s player ", 3, ts, "start");
	sv_nh_add_quoted(&nh->thead, (const uint8_t *)nh->name, nh->namelen);
	sv_buf_printf(&nh->thead, ", %s %s %s %s, mode %s\n", nh->role, nh->race, nh->gender,
		      nh->align, nh->mode < 4 ? mode_names[nh->mode] : "unknown");

	/* The name as JSON text: UTF-8 as it is, other bytes as Latin-1. */
	struct sv_buf nm;
	sv_buf_init(&nm);
	json_t *probe = json_stringn(nh->name, nh->namelen);
	if (probe) {
		sv_buf_add(&nm, nh->name, nh->namelen);
	} else {
		for (size_t i = 0; i < nh->namelen; i++) {
			uint8_t ch = (uint8_t)nh->name[i];
			if (ch < 0x80) {
				sv_buf_add(&nm, &ch, 1);
			} else {
				uint8_t u[2] = {(uint8_t)(0xc0 | ch >> 6), (uint8_t)(0x80 | (ch & 0x3f))};
				sv_buf_add(&nm, u, 2);
			}
		}
	}
	json_decref(probe);
	json_t *o = json_object();
	json_object_set_new(o, "status", json_string(nh->status));
	json_object_set_new(o, "recovery_count", json_integer(nh->recovery));
	json_object_set_new(o, "version", json_string(nh->version));
	json_object_set_new(o, "status_line", json_string(sl));
	json_object_set_new(o, "start_time", json_string(ts));
	json_object_set_new(o, "play_mode", json_string(nh->mode < 4 ? mode_names[nh->mode]
								    : "unknown"));
	json_object_set_new(o, "player_name", json_stringn(nm.len ? (char *)nm.p : "", nm.len));
	json_object_set_new(o, "role", json_string(nh->role));
	json_object_set_new(o, "race", json_string(nh->race));
	json_object_set_new(o, "gender", json_string(nh->gender));
	json_object_set_new(o, "alignment", json_string(nh->align));
	char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	nh->json.len = 0;
	if (text) {
		sv_buf_add(&nh->json, text, strlen(text));
		sv_buf_add(&nh->json, "\n", 1);
	}
	free(text);
	json_decref(o);
	sv_buf_fini(&nm);
}

ssize_t sv_nh_pread(struct sv_container *c, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	struct sv_err e;
	int rc = sv_container_read(c, off, buf, n, &got, &e);
	if (rc) {
		errno = -rc;
		return -1;
	}
	return (ssize_t)got;
}

/* Reads and checks lines 1-3. */
int sv_nh_parse_header(struct sv_container *c, struct nh *nh, struct sv_err *err)
{
	char buf[HEAD];
	size_t n = 0;
	struct sv_err rd;
	if (sv_container_read(c, 0, buf, sizeof buf, &n, &rd))
		return sv_err_set(err, -EIO, "nethack: %s", rd.msg);
	if (n < LINE1_LEN)
		return header_fail(err, 1, 0, "the file ends inside the header");
	int rc = sv_nh_parse_line1(buf, nh->status, &nh->recovery, nh->version, err);
	if (rc)
		return rc;
	if (n < LINE1_LEN + LINE2_LEN || buf[LINE1_LEN + LINE2_LEN - 1] != '\n')
		return header_fail(err, 2, LINE1_LEN, n < LINE1_LEN + LINE2_LEN
					      ? "the file ends inside the header"
					      : "the status line is not 78 characters");
	for (size_t i = LINE1_LEN; i < LINE1_LEN + LINE2_LEN - 1; i++)
		if ((uint8_t)buf[i] < 0x20 || (uint8_t)buf[i] > 0x7e)
			return header_fail(err, 2, i, "a control or non-ASCII byte");
	memcpy(nh->statusline, buf + LINE1_LEN, LINE2_LEN - 1);
	nh->statusline[LINE2_LEN - 1] = '\0';

	size_t o3 = LINE1_LEN + LINE2_LEN;
	const char *l3 = buf + o3;
	const char *nl = memchr(l3, '\n', n - o3);
	if (!nl)
		return header_fail(err, 3, o3, n == sizeof buf ? "the line is too long"
							      : "the file ends inside the header");
	/* Eight space-separated fields. */
	const char *f[8];
	size_t fl[8];
	size_t nf = 0;
	for (const char *s = l3; s < nl && nf < 9;) {
		const char *e = memchr(s, ' ', (size_t)(nl - s));
		if (!e)
			e = nl;
		if (nf < 8) {
			f[nf] = s;
			fl[nf] = (size_t)(e - s);
		}
		nf++;
		s = e + (e < nl);
		if (e == nl)
			break;
	}
	uint64_t start;
	long zero, mode;
	if (nf != 8 || nl[-1] == ' ' || !sv_nh_parse_hex(f[0], fl[0], &start))
		return header_fail(err, 3, o3, "not \"<start> 0 <mode> <name> <role> <race> "
					       "<gender> <alignment>\"");
	if (!sv_nh_parse_int(f[1], fl[1], &zero) || zero != 0 || !sv_nh_parse_int(f[2], fl[2], &mode) ||
	    mode < 0 || mode > 3)
		return header_fail(err, 3, (uint64_t)(f[1] - buf),
				   "the play mode is not 0, 1, 2 or 3 after a 0");
	struct sv_buf name;
	sv_buf_init(&name);
	const char *why;
	if (sv_nh_parse_b64_arg(f[3], fl[3], &name, &why)) {
		sv_buf_fini(&name);
		return header_fail(err, 3, (uint64_t)(f[3] - buf), "the player name is not base64");
	}
	if (!word3(f[4], fl[4], nh->role) || !word3(f[5], fl[5], nh->race) ||
	    !word3(f[6], fl[6], nh->gender) || !word3(f[7], fl[7], nh->align)) {
		sv_buf_fini(&name);
		return header_fail(err, 3, (uint64_t)(f[4] - buf),
				   "role, race, gender and alignment are not 3-letter words");
	}
	free(nh->name);
	nh->name = malloc(name.len + 1);
	if (!nh->name) {
		sv_buf_fini(&name);
		return sv_err_set(err, -ENOMEM, "out of memory");
	}
	if (name.len)
		memcpy(nh->name, name.p, name.len);
	nh->name[name.len] = '\0';
	nh->namelen = name.len;
	sv_buf_fini(&name);
	nh->start = start;
	nh->mode = (unsigned)mode;
	nh->hdr_end = (uint64_t)(nl - buf) + 1;
	sv_nh_make_header_views(nh);
	return 0;
}

/* ---- scanning ------------------------------------------------------------------- */

/*
 * Calls fn for each complete line from `off` until `limit` (or the file's
 * end): its offset and a view of it (up to HEAD bytes, and the whole line
 * when a short kind runs longer).  fn returns non-zero to stop.  *endp
 * receives the offset after the last complete line.
 */

/* As sv_nh_each_line; with `only` (two bytes), a whole line in the block
 * that starts with neither is only counted in *skipped (the open's scan
 * wants backup and diff lines; a 200 MB log has 5 million lines). */
static int each_line(struct sv_container *c, uint64_t off, uint64_t limit, size_t block, const char *only,
		     uint32_t *skipped, line_fn fn, void *arg, uint64_t *endp, struct sv_err *err);

int sv_nh_each_line(struct sv_container *c, uint64_t off, uint64_t limit, size_t block, line_fn fn,
		    void *arg, uint64_t *endp, struct sv_err *err)
{
	return each_line(c, off, limit, block, NULL, NULL, fn, arg, endp, err);
}

static int each_line(struct sv_container *c, uint64_t off, uint64_t limit, size_t block, const char *only,
		     uint32_t *skipped, line_fn fn, void *arg, uint64_t *endp, struct sv_err *err)
{
	uint8_t *blk = malloc(block);
	char *head = malloc(HEAD);
	char *big = NULL;
	int rc = 0;
	if (!blk || !head) {
		rc = sv_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	uint64_t pos = off, start = off, full = 0;
	size_t hn = 0;
	char tail[2] = {0, 0};
	while (pos < limit) {
		size_t want = limit - pos < block ? (size_t)(limit - pos) : block;
		size_t k = 0;
		struct sv_err why;
		if (sv_container_read(c, pos, blk, want, &k, &why)) {
			rc = sv_err_set(err, -EIO, "nethack: %s", why.msg);
			goto out;
		}
		if (k == 0)
			break;
		const uint8_t *p = blk, *e = blk + k;
		struct sv_nl nls;
		sv_nl_start(&nls, p, e);
		while (p < e) {
			const uint8_t *nl = sv_nl_next(&nls);
			if (nl && !full) {
				/* The whole line is in the block: seen where it is,
				 * not copied (most lines). */
				size_t len = (size_t)(nl - p);
				if (only && (!len || (p[0] != (uint8_t)only[0] &&
						      p[0] != (uint8_t)only[1]))) {
					(*skipped)++;
					start += len + 1;
					p = nl + 1;
					continue;
				}
				struct line_view lv = {(const char *)p, len, len,
						       {len >= 2 ? (char)p[len - 2] : 0,
							len ? (char)p[len - 1] : 0}};
				rc = fn(arg, start, &lv);
				if (rc)
					goto done;
				start += len + 1;
				p = nl + 1;
				continue;
			}
			size_t seg = (size_t)((nl ? nl : e) - p);
			if (hn < HEAD) {
				size_t t = seg < HEAD - hn ? seg : HEAD - hn;
				memcpy(head + hn, p, t);
				hn += t;
			}
			if (seg >= 2) {
				tail[0] = (char)p[seg - 2];
				tail[1] = (char)p[seg - 1];
			} else if (seg == 1) {
				tail[0] = tail[1];
				tail[1] = (char)p[0];
			}
			full += seg;
			if (!nl) {
				p = e;
				break;
			}
			struct line_view lv = {head, hn, full, {tail[0], tail[1]}};
			char k0 = hn ? head[0] : 0;
			if (full > hn && full <= MAX_SMALL_LINE && k0 != '*' && k0 != '~' &&
			    k0 != 'B') {
				/* A short kind running long: read it whole. */
				free(big);
				big = malloc((size_t)full);
				if (!big || sv_nh_pread(c, big, (size_t)full, start) != (ssize_t)full) {
					rc = sv_err_set(err, big ? -EIO : -ENOMEM,
							"nethack: cannot read the line at byte %llu",
							(unsigned long long)start);
					goto out;
				}
				lv.p = big;
				lv.n = (size_t)full;
			}
			rc = fn(arg, start, &lv);
			if (rc)
				goto done;
			start += full + 1;
			full = 0;
			hn = 0;
			tail[0] = tail[1] = 0;
			p = nl + 1;
		}
		pos += (uint64_t)k;
	}
done:
	if (rc > 0)
		rc = 0;
	*endp = start;
out:
	free(big);
	free(head);
	free(blk);
	return rc;
}

struct scan {
	struct sv_container *c;
	struct nh *nh;
	struct sv_buf content;
	bool add_nodes;     /* the directories are listed: add their entries */
	int err;
	struct sv_buf *warns; /* the warnings said, each NUL-ended (for the
			       * index), or NULL */
	enum { SCAN_ALL, SCAN_ENTRIES, SCAN_DETAILS } what;
	uint32_t line;      /* lines scanned, the header's included */
	bool half;          /* the second half of a split scan: lines counted
			     * from 0, the entries' warnings kept (struct
			     * ewarn, in `held`) for the merge, which knows
			     * the line numbers and the first half's backups */
	struct sv_buf held;
};

/* A warning of the entries' scan, said at once or held for a merge. */
enum { EW_BAD, EW_HUGE, EW_PTR, EW_NO_BACKUP, EW_FIRST };
struct ewarn {
	uint32_t kind, line;
	uint64_t off, a, b;  /* EW_HUGE: line and payload sizes; EW_PTR: the
			      * backup's number and the previous backup's
			      * offset; EW_FIRST (held only): a second half's
			      * first backup's number */
	const char *why;     /* EW_BAD: a static string */
};

/* A warning found while scanning: said, and kept for the index. */
__attribute__((format(printf, 2, 3)))
static void scan_warn(struct scan *s, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	sv_warn(s->c, "%s", msg);
	if (s->warns && sv_buf_add(s->warns, msg, strlen(msg) + 1))
		s->err = -ENOMEM;
}

static void ent_warn(struct scan *s, struct ewarn w)
{
	if (s->half) {
		/* A diff before the half's first backup: the merge finds
		 * those again from the entries (a half with no backup would
		 * hold one for each of its diffs). */
		if (w.kind == EW_NO_BACKUP)
			return;
		if (sv_buf_add(&s->held, &w, sizeof w))
			s->err = -ENOMEM;
		return;
	}
	switch (w.kind) {
	case EW_BAD:
		scan_warn(s, "nethack: line %u (byte %llu): %s", w.line, (unsigned long long)w.off,
			  w.why);
		break;
	case EW_HUGE:
		scan_warn(s, "nethack: line %u (byte %llu): %llu bytes, a payload of %llu: more "
			  "than savefs takes (1 GB a line, 4 GB a payload)", w.line,
			  (unsigned long long)w.off, (unsigned long long)w.a, (unsigned long long)w.b);
		break;
	case EW_PTR:
		scan_warn(s, "nethack: line %u: the backup's number %08llx is not the previous "
			  "backup's offset %llu", w.line, (unsigned long long)w.a,
			  (unsigned long long)w.b);
		break;
	case EW_NO_BACKUP:
		scan_warn(s, "nethack: line %u: a diff before any backup", w.line);
		break;
	}
}


/* The entry table and checkpoints as arrays of their own (they pointed
 * into the index record): before they grow.  -ENOMEM. */
static int unkeep(struct nh *nh)
{
	if (!nh->kept)
		return 0;
	struct ent *ents;
	size_t cap;
	struct ck *ck = malloc(nh->nck ? nh->nck * sizeof *ck : 1);
	if (!ck || sv_tab_alloc((void **)&ents, &cap, nh->nents, sizeof *ents)) {
		free(ck);
		return -ENOMEM;
	}
	memcpy(ents, nh->ents, nh->nents * sizeof *ents);
	sv_tab_touch(2 * nh->nents * sizeof *ents);
	memcpy(ck, nh->ck, nh->nck * sizeof *ck);
	nh->ents = ents;
	nh->capents = cap;
	nh->ck = ck;
	sv_blob_unref(nh->kept);
	nh->kept = NULL;
	return 0;
}

/* A line as SCAN_ENTRIES sees it (the entries, counted lines) or
 * SCAN_DETAILS (all but the entries), or both (SCAN_ALL). */
static int scan_line(void *arg, uint64_t off, const struct line_view *l)
{
	struct scan *s = arg;
	struct nh *nh = s->nh;
	bool payload = l->n && (l->p[0] == '*' || l->p[0] == '~');
	bool details = s->what != SCAN_ENTRIES, entries = s->what != SCAN_DETAILS;
	if (nh->kept && unkeep(nh))
		return s->err = -ENOMEM;
	if (details && (s->line - 3) % CK_EVERY == 0) {
		if (sv_grow((void **)&nh->ck, &nh->capck, nh->nck + 1, sizeof *nh->ck))
			return s->err = -ENOMEM;
		nh->ck[nh->nck++] = (struct ck){off, nh->tbody, nh->time, s->line + 1};
	}
	s->line++;
	if (!details && !payload)
		return 0;
	enum kind kind;
	uint64_t delta = 0, size = 0, len = 0;
	const char *why = NULL;
	bool comp;
	if (details)
		len = sv_nh_transcript_line(s->line, nh->time, l, NULL, &s->content, NULL, &kind,
					    &delta, &size, &why);
	else
		kind = sv_nh_payload_line(l, &size, &comp, &why);
	if (details) {
		nh->time += delta;
		if (nh->time < delta)
			nh->time = UINT64_MAX;
		nh->tbody += len;
		nh->kinds[kind]++;
		if (kind == K_GAMEOVER)
			nh->over = true;
	}
	/* A malformed line is said once: a backup or diff by the entries'
	 * scan, another kind by the details'. */
	if (kind == K_BAD && (payload ? entries : details))
		ent_warn(s, (struct ewarn){EW_BAD, s->line, off, 0, 0, why});
	/* A malformed backup or diff still gets its files, which fail with
	 * the reason: the states after it cannot be made. */
	if (!entries || !payload || (kind != K_BACKUP && kind != K_DIFF && kind != K_BAD))
		return 0;
	if (sv_tab_grow((void **)&nh->ents, &nh->capents, nh->nents + 1, sizeof *nh->ents))
		return s->err = -ENOMEM;
	struct ent *e = &nh->ents[nh->nents];
	bool backup = l->p[0] == '*';
	bool huge = l->full > ENT_MAX_LEN || size > UINT32_MAX || off > ENT_MAX_OFF;
	if (huge)
		ent_warn(s, (struct ewarn){EW_HUGE, s->line, off, l->full, size, NULL});
	*e = (struct ent){.off = off & ENT_MAX_OFF,
			  .len = huge ? 0 : l->full < ENT_LEN_FAR ? l->full : ENT_LEN_FAR,
			  .backup = backup, .bad = kind == K_BAD || huge, .line = s->line};
	uint32_t prev = sv_nh_last_backup(nh);
	if (backup && !e->bad) {
		uint64_t ptr = 0;
		if (prev == UINT32_MAX) {
			if (s->half && sv_nh_parse_hex(l->p + 1, 8, &ptr))
				ent_warn(s, (struct ewarn){EW_FIRST, s->line, off, ptr, 0, NULL});
		} else {
			sv_nh_parse_hex(l->p + 1, 8, &ptr);
			if (ptr != nh->ents[prev].off)
				ent_warn(s, (struct ewarn){EW_PTR, s->line, off, ptr,
							   nh->ents[prev].off, NULL});
		}
		if (sv_grow((void **)&nh->bk, &nh->capbk, nh->nbk + 1, sizeof *nh->bk))
			return s->err = -ENOMEM;
		nh->bk[nh->nbk++] = (uint32_t)nh->nents;
	}
	if (!backup && prev == UINT32_MAX && !e->bad)
		ent_warn(s, (struct ewarn){EW_NO_BACKUP, s->line, off, 0, 0, NULL});
	nh->nents++;
	nh->nbackups += backup;
	if (s->add_nodes)
		sv_nh_add_ent_nodes(s->c, nh, nh->nents - 1);
	return 0;
}


/* A scan ended at `end` (after its last complete line), `line` lines
 * seen: nh's end, line count and torn tail follow. */
static void scan_done(struct sv_container *c, struct nh *nh, uint32_t line, uint64_t end,
		      uint64_t limit)
{
	nh->line = line;
	nh->end = nh->det_end = end;
	/* A scan that stopped where it was told (a first need's scan, up
	 * to the end the open saw) keeps the torn tail the open saw: lines
	 * appended since are new to the follower, not torn. */
	if (end == limit)
		return;
	uint64_t now = sv_container_size_now(c);
	nh->torn = now > end ? now - end : 0;
}

/* Scans the complete lines from nh->end on as s says; nh's end, line
 * count and torn tail follow. */
static int scan_on(struct sv_container *c, struct nh *nh, struct scan *s, uint64_t limit,
		   struct sv_err *err)
{
	uint64_t end = nh->end;
	/* The entries' scan is told of backup and diff lines alone, the
	 * others counted (s->line). */
	int rc = each_line(c, nh->end, limit, BLOCK,
			   s->what == SCAN_ENTRIES ? "*~" : NULL, &s->line, scan_line, s, &end, err);
	sv_buf_fini(&s->content);
	if (!rc && s->err)
		rc = sv_err_set(err, s->err, "out of memory");
	scan_done(c, nh, s->line, end, limit);
	return rc;
}

/* Scans the complete lines from nh->end on (what after the open: its
 * details are found first). */
int sv_nh_scan_from(struct sv_container *c, struct nh *nh, bool add_nodes,
		    struct sv_err *err)
{
	int rc = sv_nh_details(c, nh, err);
	if (rc)
		return rc;
	struct scan s = {c, nh, {0}, add_nodes, 0, NULL, SCAN_ALL, nh->line, false, {0}};
	return scan_on(c, nh, &s, UINT64_MAX, err);
}

/*
 * A big log's entries are scanned by two threads: the second scans the
 * second half, from the first newline after the middle, with entries,
 * line numbers and warnings of its own, which the merge puts after the
 * first half's.  What a line of the second half says about what came
 * before (its backup's number, a diff before any backup) is settled at
 * the merge, so that the result is the one scan's, warnings and their
 * order included.
 */
uint64_t sv_nh_split_at = (uint64_t)32 << 20;

struct half {
	struct sv_container *c;
	uint64_t mid, limit;  /* where it starts and stops */
	struct nh nh;         /* its entries: indexes and lines its own */
	struct scan s;
	uint64_t end;
	int rc;
	struct sv_err err;
};

static void *scan_half(void *arg)
{
	struct half *h = arg;
	h->s = (struct scan){h->c, &h->nh, {0}, false, 0, NULL, SCAN_ENTRIES, 0, true, {0}};
	h->rc = each_line(h->c, h->mid, h->limit, BLOCK, "*~", &h->s.line, scan_line, &h->s,
			  &h->end, &h->err);
	if (!h->rc && h->s.err)
		h->rc = h->s.err;
	return NULL;
}

/* Where the second half starts: after the first newline from the middle
 * on; 0 if none is near (a log of few, long lines is scanned whole). */
static uint64_t split_point(struct sv_container *c, uint64_t from, uint64_t size)
{
	uint8_t win[65536];
	uint64_t mid = from + (size - from) / 2;
	ssize_t k = sv_nh_pread(c, win, sizeof win, mid);
	const uint8_t *nl = k > 0 ? memchr(win, '\n', (size_t)k) : NULL;
	return nl ? mid + (uint64_t)(nl - win) + 1 : 0;
}

/* The second half's entries and warnings after the first's (nh, its
 * scan s, `lines` lines seen), as one scan would have found them.
 * -ENOMEM, with nh as the first half left it. */
static int merge_half(struct nh *nh, struct scan *s, struct half *h)
{
	size_t na = nh->nents, nb = h->nh.nents;
	uint32_t lines = s->line;
	if (sv_tab_grow((void **)&nh->ents, &nh->capents, na + nb, sizeof *nh->ents))
		return -ENOMEM;
	if (sv_grow((void **)&nh->bk, &nh->capbk, nh->nbk + h->nh.nbk, sizeof *nh->bk))
		return -ENOMEM;
	uint32_t last_a = sv_nh_last_backup(nh);
	/* Moved in pieces, the half's pages given back behind each (it is
	 * freed after: both tables whole at once were half again the
	 * entries' memory at the scan's peak). */
	const size_t piece = 65536;
	for (size_t i = 0; i < nb; i += piece) {
		size_t m = nb - i < piece ? nb - i : piece;
		for (size_t j = i; j < i + m; j++) {
			struct ent e = h->nh.ents[j];
			e.line += lines;
			nh->ents[na + j] = e;
		}
		sv_tab_touch(2 * m * sizeof *nh->ents);
		sv_give_back(h->nh.ents, i * sizeof *h->nh.ents, (i + m) * sizeof *h->nh.ents);
	}
	for (size_t i = 0; i < h->nh.nbk; i++)
		nh->bk[nh->nbk++] = h->nh.bk[i] + (uint32_t)na;
	nh->nents = na + nb;
	nh->nbackups += h->nh.nbackups;
	const struct ewarn *w = (const void *)h->s.held.p;
	size_t nw = h->s.held.len / sizeof *w, k = 0;
	/* Its diffs before its first backup are diffs before any backup if
	 * the first half has none either: said in line order with the
	 * warnings held. */
	const struct ent *he = nb ? nh->ents + na : NULL; /* lines moved on by `lines` */
	size_t j = 0, jend = last_a != UINT32_MAX	     ? 0
			     : sv_nh_first_backup(&h->nh) == UINT32_MAX ? nb
									 : sv_nh_first_backup(&h->nh);
	for (;;) {
		while (j < jend && (he[j].backup || he[j].bad))
			j++;
		if (j < jend && (k == nw || he[j].line - lines < w[k].line)) {
			ent_warn(s, (struct ewarn){EW_NO_BACKUP, he[j].line, he[j].off, 0, 0, NULL});
			j++;
			continue;
		}
		if (k == nw)
			break;
		struct ewarn x = w[k++];
		x.line += lines;
		if (x.kind == EW_FIRST) {
			if (last_a == UINT32_MAX || x.a == nh->ents[last_a].off)
				continue;
			x.kind = EW_PTR;
			x.b = nh->ents[last_a].off;
		}
		ent_warn(s, x);
	}
	return s->err;
}

/* The open's scan: the entries, and the lines counted. */
int sv_nh_scan_entries(struct sv_container *c, struct nh *nh, struct sv_buf *warns,
		       uint64_t limit, struct sv_err *err)
{
	struct scan s = {c, nh, {0}, false, 0, warns, SCAN_ENTRIES, nh->line, false, {0}};
	uint64_t size = sv_container_size(c);
	if (size > limit)
		size = limit;
	struct half *h = NULL;
	pthread_t th;
	if (size > nh->end && size - nh->end >= sv_nh_split_at && !nh->kept &&
	    (h = calloc(1, sizeof *h))) {
		h->c = c;
		h->limit = limit;
		h->mid = split_point(c, nh->end, size);
		if (!h->mid || h->mid >= size || pthread_create(&th, NULL, scan_half, h)) {
			free(h);
			h = NULL;
		}
	}
	if (!h)
		return scan_on(c, nh, &s, limit, err);
	/* The first half, here. */
	uint64_t end = nh->end;
	int rc = each_line(c, nh->end, h->mid, BLOCK, "*~", &s.line, scan_line, &s, &end, err);
	if (!rc && s.err)
		rc = sv_err_set(err, s.err, "out of memory");
	pthread_join(th, NULL);
	if (!rc) {
		nh->line = s.line;
		nh->end = end;
		/* The halves meet where the second began (the file did not
		 * change under them): merged; else the rest is scanned here. */
		if (!h->rc && end == h->mid &&
		    (uint64_t)s.line + h->s.line <= UINT32_MAX) {
			rc = merge_half(nh, &s, h);
			if (rc)
				rc = sv_err_set(err, rc, "out of memory");
			else
				scan_done(c, nh, s.line + h->s.line, h->end, limit);
		} else {
			rc = scan_on(c, nh, &s, limit, err);
		}
	}
	sv_tab_free(h->nh.ents);
	free(h->nh.bk);
	sv_buf_fini(&h->s.held);
	free(h);
	return rc;
}

int sv_nh_details(struct sv_container *c, struct nh *nh, struct sv_err *err)
{
	int ready = sv_nh_ready(c, nh, err);
	if (ready)
		return ready;
	if (__atomic_load_n(&nh->detailed, __ATOMIC_ACQUIRE) &&
	    !__atomic_load_n(&nh->det_warns.len, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&nh->det_lock);
	int rc = 0;
	if (nh->detailed) {
		/* Kept: what the scan said, said now, as a scan would. */
		for (size_t at = 0; at < nh->det_warns.len; at += strlen((char *)nh->det_warns.p + at) + 1)
			sv_warn(c, "%s", (char *)nh->det_warns.p + at);
		sv_buf_fini(&nh->det_warns);
	} else {
		struct sv_buf warns;
		sv_buf_init(&warns);
		nh->time = nh->start;
		nh->tbody = 0;
		nh->over = false;
		memset(nh->kinds, 0, sizeof nh->kinds);
		if (!nh->kept)
			free(nh->ck);
		nh->ck = NULL;
		nh->nck = nh->capck = 0;
		struct scan s = {c, nh, {0}, false, 0, &warns, SCAN_DETAILS, 3, false, {0}};
		uint64_t end = nh->hdr_end;
		rc = sv_nh_each_line(c, nh->hdr_end, nh->det_end, BLOCK, scan_line,
				     &s, &end, err);
		sv_buf_fini(&s.content);
		if (!rc && s.err)
			rc = sv_err_set(err, s.err, "out of memory");
		if (!rc && (end != nh->det_end || s.line != nh->line))
			rc = sv_err_set(err, -EIO, "nethack: the log changed while it was read "
					"(line %u, byte %llu)", s.line, (unsigned long long)end);
		if (!rc) {
			/* The whole scan, kept for the next mount of the very
			 * same file. */
			if (nh->end == nh->det_end)
				sv_nh_scan_store(c, nh, &nh->ent_warns, &warns);
			sv_buf_fini(&nh->ent_warns);
			__atomic_store_n(&nh->detailed, true, __ATOMIC_RELEASE);
		}
		sv_buf_fini(&warns);
	}
	pthread_mutex_unlock(&nh->det_lock);
	return rc;
}
