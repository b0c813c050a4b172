/* strobe/export.h: symbol visibility for the public API.
 *
 * The library is built with hidden visibility by default; only declarations marked STROBE_API are
 * exported. Users never need to define anything: STROBE_BUILDING is set by strobe's own build. */
#ifndef STROBE_EXPORT_H
#define STROBE_EXPORT_H

#if defined(_WIN32)
#if defined(STROBE_BUILDING)
#define STROBE_API __declspec(dllexport)
#else
#define STROBE_API
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define STROBE_API __attribute__((visibility("default")))
#else
#define STROBE_API
#endif

#endif /* STROBE_EXPORT_H */
