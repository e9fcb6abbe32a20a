/*
 * test_btree5_cow.c - the copy-on-write commit of core/fmt/starbound/btree5_cow.c against
 * a model: rounds of random inserts, updates and removals (values from 0
 * bytes to chains of many blocks), at block sizes that give deep indexes,
 * each round read back from the file and compared record by record; the
 * game's rules checked after each (index nodes within the limit, every
 * leaf at one depth, free blocks neither reachable nor past the device,
 * the device size exact); the previous tree still whole behind the
 * inactive root slot (a crash before the flip); space reused by repeated
 * edits; an emptied tree; changes out of order refused.
 */
#include "fmt/starbound/btree5_cow.h"
#include "t.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define NKEYS 1500

static uint64_t rng = 0x1234567887654321ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

struct model {
	uint32_t ks;
	uint8_t key[NKEYS][32];
	uint8_t *val[NKEYS]; /* NULL: absent */
	size_t len[NKEYS];
};

static int rd_fd(void *arg, uint64_t off, void *buf, size_t n, struct sv_err *err)
{
	if (pread(*(int *)arg, buf, n, (off_t)off) != (ssize_t)n)
		return sv_err_set(err, -EIO, "short read");
	return 0;
}

static struct sv_bt5_tree *load(int fd)
{
	uint8_t hdr[SV_BT5_HEADER];
	struct stat st;
	struct sv_bt5 h;
	struct sv_bt5_tree *t = NULL;
	struct sv_err e;
	fstat(fd, &st);
	if (pread(fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr ||
	    sv_bt5_header(hdr, sizeof hdr, (uint64_t)st.st_size, &h, &e) ||
	    sv_bt5_tree_load(&h, rd_fd, &fd, &t, &e)) {
		fprintf(stderr, "load: %s\n", e.msg);
		return NULL;
	}
	return t;
}

/* The model's records, in key order, equal the tree's, value for value. */
static void same(const struct model *m, int fd, const struct sv_bt5_tree *t, const char *when)
{
	uint32_t r = 0;
	int bad = 0;
	for (int i = 0; i < NKEYS; i++) {
		if (!m->val[i])
			continue;
		if (r >= t->nrecs || memcmp(t->keys + (size_t)r * m->ks, m->key[i], m->ks)) {
			bad++;
			break;
		}
		uint8_t *buf = malloc(m->len[i] + 1);
		struct sv_err e;
		if (t->locs[r].len != m->len[i] ||
		    sv_bt5_value(&t->h, rd_fd, &fd, &t->locs[r], buf, &e) ||
		    memcmp(buf, m->val[i], m->len[i]))
			bad++;
		free(buf);
		r++;
	}
	if (bad || r != t->nrecs)
		fprintf(stderr, "%s: the tree differs from the model\n", when);
	T_OK(!bad && r == t->nrecs);
}

/* The game's rules, from the tree's shape. */
static void rules(const struct sv_bt5_tree *t, int fd)
{
	uint32_t maxp = (t->h.block_size - 11) / (t->h.key_size + 4) + 1;
	bool ok = true;
	for (uint32_t i = 0; i < t->nnodes; i++)
		if (!t->nodes[i].leaf && (t->nodes[i].n > maxp || t->nodes[i].n < 1))
			ok = false;
	T_OK(ok);
	/* Every leaf at one depth. */
	int depth = -1;
	bool one = true;
	struct { uint32_t n; int d; } stack[4096];
	int sp = 0;
	stack[sp++].n = t->root;
	stack[0].d = 0;
	while (sp) {
		uint32_t n = stack[--sp].n;
		int d = stack[sp].d;
		if (t->nodes[n].leaf) {
			if (depth < 0)
				depth = d;
			one &= depth == d;
			continue;
		}
		for (uint32_t k = 0; k < t->nodes[n].n && sp < 4096; k++) {
			stack[sp].n = t->kids[t->nodes[n].first + k];
			stack[sp++].d = d + 1;
		}
	}
	T_OK(one);
	T_INT((int)t->levels, depth);
	/* Free blocks: inside the device, not reachable, once each. */
	uint8_t *seen = calloc(t->h.nblocks + 1, 1);
	bool fine = true;
	for (uint32_t i = 0; i < t->nnodes; i++)
		if (!t->nodes[i].leaf)
			seen[t->nodes[i].block]++;
	for (size_t i = 0; i < t->nchain; i++)
		seen[t->chain[i]]++;
	for (uint32_t i = 0; i < t->nff; i++)
		fine &= t->ff[i] < t->h.nblocks && !seen[t->ff[i]]++;
	for (uint32_t i = 0; i < t->nfree; i++)
		fine &= t->freeb[i] < t->h.nblocks && !seen[t->freeb[i]]++;
	/* No block is lost either: each is in the tree or free. */
	for (uint64_t b = 0; b < t->h.nblocks; b++)
		fine &= seen[b] == 1;
	free(seen);
	T_OK(fine);
	struct stat st;
	fstat(fd, &st);
	T_INT(sv_bt5_active(&t->h)->device_size, st.st_size);
}

static void apply(struct model *m, int fd, struct sv_bt5_tree **t, int nchanges, int big)
{
	struct sv_bt5_change *ch = calloc((size_t)nchanges, sizeof *ch);
	uint8_t *pick = calloc(NKEYS, 1);
	int n = 0;
	for (int k = 0; k < nchanges; k++)
		pick[rnd() % NKEYS] = 1;
	for (int i = 0; i < NKEYS; i++) {
		if (!pick[i])
			continue;
		bool del = m->val[i] && rnd() % 3 == 0;
		free(m->val[i]);
		m->val[i] = NULL;
		if (!del) {
			size_t len = rnd() % 4 == 0 ? 0 : rnd() % 300;
			if (big && rnd() % 50 == 0)
				len = 3000 + rnd() % 9000;
			m->val[i] = malloc(len + 1);
			for (size_t k = 0; k < len; k++)
				m->val[i][k] = (uint8_t)rnd();
			m->len[i] = len;
		}
		ch[n].key = m->key[i];
		ch[n].val = m->val[i];
		ch[n].len = m->val[i] ? m->len[i] : 0;
		if (!del && !ch[n].val)
			ch[n].val = (const uint8_t *)"";
		n++;
	}
	struct sv_bt5_tree *nw = NULL;
	struct sv_err e;
	int rc = sv_bt5_tree_commit(*t, fd, ch, (size_t)n, NULL, &nw, &e);
	T_INT(0, rc);
	if (rc)
		fprintf(stderr, "commit: %s\n", e.msg);
	sv_bt5_tree_free(*t);
	*t = nw;
	free(ch);
	free(pick);
}

static void rounds(uint32_t bs, uint32_t ks, int nrounds, int per, int big)
{
	static struct model m;
	memset(&m, 0, sizeof m);
	m.ks = ks;
	for (int i = 0; i < NKEYS; i++)
		for (uint32_t k = 0; k < ks; k++)
			m.key[i][k] = k < 2 ? (uint8_t)(i >> (8 * (1 - k))) : (uint8_t)(i * 7 + k);
	char path[] = "/tmp/test_bt5tree.XXXXXX";
	int fd = mkstemp(path);
	unlink(path);
	struct sv_err e;
	T_INT(0, sv_bt5_create(fd, bs, "Test", ks, &e));
	struct sv_bt5_tree *t = load(fd);
	T_OK(t != NULL);
	uint8_t *prev = NULL;
	struct stat st;
	for (int r = 0; r < nrounds && t; r++) {
		/* The file as committed before this round. */
		fstat(fd, &st);
		free(prev);
		prev = malloc((size_t)st.st_size);
		pread(fd, prev, (size_t)st.st_size, 0);
		struct model *old = malloc(sizeof *old);
		memcpy(old, &m, sizeof m);
		for (int i = 0; i < NKEYS; i++)
			if (m.val[i]) {
				old->val[i] = malloc(m.len[i] + 1);
				memcpy(old->val[i], m.val[i], m.len[i]);
			}
		uint8_t was = prev[32];
		apply(&m, fd, &t, per, big);
		if (!t)
			break;
		struct sv_bt5_tree *back = load(fd);
		T_OK(back != NULL);
		if (back) {
			same(&m, fd, back, "after a commit");
			rules(back, fd);
			sv_bt5_tree_free(back);
		}
		same(&m, fd, t, "the commit's own tree");
		/* Byte 32 put back: the tree before the commit, whole (nothing
		 * it reached was written). */
		uint8_t now;
		pread(fd, &now, 1, 32);
		T_INT(!was, !!now);
		pwrite(fd, &was, 1, 32);
		back = load(fd);
		T_OK(back != NULL);
		if (back) {
			same(old, fd, back, "the old root after the commit");
			sv_bt5_tree_free(back);
		}
		pwrite(fd, &now, 1, 32);
		for (int i = 0; i < NKEYS; i++)
			free(old->val[i]);
		free(old);
	}
	free(prev);
	sv_bt5_tree_free(t);
	for (int i = 0; i < NKEYS; i++)
		free(m.val[i]);
	close(fd);
}

/* Repeated edits of one record reuse freed blocks: the file stops
 * growing. */
static void reuse(void)
{
	char path[] = "/tmp/test_bt5tree.XXXXXX";
	int fd = mkstemp(path);
	unlink(path);
	struct sv_err e;
	sv_bt5_create(fd, 2048, "World4", 5, &e);
	struct sv_bt5_tree *t = load(fd), *nw;
	uint8_t keys[200][5], val[5000];
	struct sv_bt5_change ch[200];
	for (int i = 0; i < 200; i++) {
		keys[i][0] = 2;
		keys[i][1] = 0;
		keys[i][2] = (uint8_t)i;
		keys[i][3] = keys[i][4] = 0;
		ch[i] = (struct sv_bt5_change){keys[i], val, 1000 + (size_t)i * 10};
	}
	memset(val, 'x', sizeof val);
	T_INT(0, sv_bt5_tree_commit(t, fd, ch, 200, NULL, &nw, &e));
	sv_bt5_tree_free(t);
	t = nw;
	off_t sizes[100];
	struct stat st;
	for (int i = 0; i < 100; i++) {
		struct sv_bt5_change one = {keys[i % 7], val, 900 + (size_t)(i % 3) * 1500};
		T_INT(0, sv_bt5_tree_commit(t, fd, &one, 1, NULL, &nw, &e));
		sv_bt5_tree_free(t);
		t = nw;
		fstat(fd, &st);
		sizes[i] = st.st_size;
	}
	T_INT(sizes[19], sizes[99]);
	rules(t, fd);
	/* Out of order: refused before anything is written. */
	struct sv_bt5_change two[2] = {{keys[5], val, 1}, {keys[4], val, 1}};
	T_INT(-EINVAL, sv_bt5_tree_commit(t, fd, two, 2, NULL, &nw, &e));
	T_STR("btree: changes out of order", e.msg);
	/* Everything removed: an empty root leaf; then records again. */
	struct sv_bt5_change del[200];
	for (int i = 0; i < 200; i++)
		del[i] = (struct sv_bt5_change){keys[i], NULL, 0};
	T_INT(0, sv_bt5_tree_commit(t, fd, del, 200, NULL, &nw, &e));
	sv_bt5_tree_free(nw);
	sv_bt5_tree_free(t);
	t = load(fd);
	T_UINT(0, t->nrecs);
	T_OK(t->nodes[t->root].leaf);
	rules(t, fd);
	T_INT(0, sv_bt5_tree_commit(t, fd, ch, 3, NULL, &nw, &e));
	sv_bt5_tree_free(nw);
	sv_bt5_tree_free(t);
	t = load(fd);
	T_UINT(3, t->nrecs);
	T_INT(1, sv_bt5_tree_find(t, keys[1]));
	T_INT(-1, sv_bt5_tree_find(t, keys[9]));
	sv_bt5_tree_free(t);
	close(fd);
}

int main(void)
{
	rounds(2048, 5, 12, 400, 1);  /* World4's shape, long chains */
	rounds(256, 5, 12, 300, 1);   /* deep indexes (28 children a node) */
	rounds(128, 32, 10, 200, 0);  /* Celestial2's keys, 4 children a node */
	reuse();
	return t_done();
}
