/* doodle.c: being written. */
#include "doodle.h"
