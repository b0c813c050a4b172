/* dist.h: the rank's metadata for a session's result (strobe/dist.h says what and from where). */
#ifndef STROBE_CORE_DIST_H
#define STROBE_CORE_DIST_H

#include "strobe/result.h"

/* Sets "distributedInfo" and "strobe_job" in `r` when a rank is known. @return 0 or
 * STROBE_ENOMEM. */
int strobe__dist_meta(strobe_result *r);

#endif
