/* zip.c: being written. */
#include "doodle.h"
