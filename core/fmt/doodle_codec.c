/* doodle_codec.c: being written. */
#include "doodle.h"
