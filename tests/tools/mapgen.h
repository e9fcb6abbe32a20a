/*
 * mapgen.h - generated Teeworlds/DDNet maps (tests, benchmark, fuzzing).
 */
#ifndef SV_MAPGEN_H
#define SV_MAPGEN_H

#include "fmt/teeworlds/datafile.h"

enum { MAPGEN_DDNET, MAPGEN_TW07, MAPGEN_L17, MAPGEN_L22 };

struct mapgen_opts {
	int flavour;        /* MAPGEN_* */
	int w, h;           /* the game layer's size */
	int images;         /* extra embedded images of image_size square */
	int image_size;
	bool settings;      /* info carries server settings */
	bool no_info;       /* no info item at all (as maps before it had one) */
	int version;        /* datafile version 3 or 4 */
	bool crude;         /* the old writers' short size fields */
	bool small;         /* 8 x 6 images instead of 64 x 48 (fuzzing seeds) */
};

/* The generator's random numbers: deterministic for a seed. */
void mapgen_seed(uint64_t seed);
uint64_t mapgen_rand(void);
/* Image-like RGBA bytes. */
void mapgen_fill_image(uint8_t *p, size_t n);

/* Writes the map to fd.  0 or -errno with a reason. */
int mapgen_write(int fd, const struct mapgen_opts *o, struct sv_err *err);

#endif
