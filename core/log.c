/*
 * log.c - the container's log (the last LOG_LINES lines, each stamped with
 * the time in UTC; /.savefs/log shows them) and its warnings (found while
 * opening or decoding; /.savefs/info lists them, and each is logged too).
 * The lowest layer of the container: any lock, or none.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void log_line(struct sv_container *c, const char *msg)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
	size_t n = strlen(stamp) + strlen(msg) + 2;
	char *line = malloc(n);
	if (!line)
		return;
	snprintf(line, n, "%s %s", stamp, msg);
	pthread_mutex_lock(&c->log_lock);
	free(c->log[c->log_next]);
	c->log[c->log_next] = line;
	c->log_next = (c->log_next + 1) % LOG_LINES;
	if (c->log_count < LOG_LINES)
		c->log_count++;
	__atomic_add_fetch(&c->log_said, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->log_lock);
}

uint64_t sv_log_said(struct sv_container *c)
{
	return __atomic_load_n(&c->log_said, __ATOMIC_RELAXED);
}

void sv_log(struct sv_container *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	log_line(c, msg);
}

void sv_warn(struct sv_container *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (c->reindexing) /* found before: already said */
		return;
	log_line(c, msg);
	/* Formats warn while opening, and some as they first decode an
	 * entry (readers run in parallel): the log's mutex guards the list. */
	pthread_mutex_lock(&c->log_lock);
	char **w = c->nwarnings >= 1000 ? NULL
					: realloc(c->warnings, (c->nwarnings + 1) * sizeof *w);
	if (w) {
		c->warnings = w;
		char *s = strdup(msg);
		if (s)
			c->warnings[c->nwarnings++] = s;
	}
	pthread_mutex_unlock(&c->log_lock);
}


