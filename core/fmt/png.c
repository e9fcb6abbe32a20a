/* png.c: being written. */
#include "doodle.h"
