/*
 * fuzz_tmp.h - the one file a fuzz target's write-back round trip writes
 * its container to: fuzz_path(NAME) makes a private directory (in
 * /dev/shm when it can, else /tmp) on first use and returns DIR/NAME; the
 * file and the directory are removed at exit.
 */
#ifndef FUZZ_TMP_H
#define FUZZ_TMP_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz_dir[64], fuzz_file[96];

static void fuzz_cleanup(void)
{
	unlink(fuzz_file);
	rmdir(fuzz_dir);
}

static const char *fuzz_path(const char *name)
{
	if (!fuzz_dir[0]) {
		const char *base = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
		snprintf(fuzz_dir, sizeof fuzz_dir, "%s/savefs-fuzz-XXXXXX", base);
		if (!mkdtemp(fuzz_dir))
			abort();
		snprintf(fuzz_file, sizeof fuzz_file, "%s/%s", fuzz_dir, name);
		atexit(fuzz_cleanup);
	}
	return fuzz_file;
}

#endif
