/* strobe/version.h: the version of the headers a program is compiled against.
 *
 * This file is the one place the version is written: CMake reads the project version from it.
 * strobe_version() (session.h) returns the version of the library that is running, which may be
 * newer than these headers within the same major version (see README, "ABI and versions"). */
#ifndef STROBE_VERSION_H
#define STROBE_VERSION_H

#define STROBE_VERSION_MAJOR 0
#define STROBE_VERSION_MINOR 1
#define STROBE_VERSION_PATCH 0

/* Two levels, so that the macros' values are stringified rather than their names. */
#define STROBE__VERSION_STR_(x) #x
#define STROBE__VERSION_STR(x) STROBE__VERSION_STR_(x)
/* "MAJOR.MINOR.PATCH", e.g. "0.1.0". */
#define STROBE_VERSION_STRING                                                                      \
    STROBE__VERSION_STR(STROBE_VERSION_MAJOR)                                                      \
    "." STROBE__VERSION_STR(STROBE_VERSION_MINOR) "." STROBE__VERSION_STR(STROBE_VERSION_PATCH)
/* One number that grows with every release: MAJOR * 10000 + MINOR * 100 + PATCH. */
#define STROBE_VERSION_NUMBER                                                                      \
    (STROBE_VERSION_MAJOR * 10000 + STROBE_VERSION_MINOR * 100 + STROBE_VERSION_PATCH)

#endif /* STROBE_VERSION_H */
