/* nvtx.h: NVTX capture. strobe acts as an NVTX tool: the NVTX headers compiled into a program load
 * the library named by NVTX_INJECTION64_PATH on the program's first NVTX call and call its
 * InitializeInjectionNvtx2() (exported by libstrobe.so only: src/inject_export.c), which hands the
 * program's table of NVTX entry points to strobe__nvtx_inject(). From then on every NVTX range,
 * mark, domain, registered string and name reaches strobe, and is recorded into the session that
 * runs (nothing is recorded, and a push/pop costs a relaxed load and a thread-local counter, while
 * none does).
 *
 * Contract for drivers (`strobe record`, a preload, a wrapper library that links strobe_static and
 * exports its own InitializeInjectionNvtx2):
 * - strobe__nvtx_inject() may be called before any session starts, from any thread;
 * - calling it again (another NVTX instance: each shared object compiled with the NVTX headers
 *   has its own table and calls the tool once) is harmless: each table is filled, the shared
 *   state is set up once;
 * - it never prints and never fails the program: a table it cannot read is refused with a
 *   negative return, and NVTX then keeps its no-op entry points. */
#ifndef STROBE_NVTX_H
#define STROBE_NVTX_H

/* Fills the NVTX callback tables of the NVTX instance whose `nvtxGetExportTable` function is
 * `get_export_table` (NVTX's NvtxGetExportTableFunc_t, passed as a plain pointer so that no NVTX
 * header is needed). @return 1 (NVTX's "tool attached") or a negative STROBE_E* code (NULL, or no
 * callbacks table). */
int strobe__nvtx_inject(void *get_export_table);

/* A capture range (`strobe record --capture-range nvtx:NAME`): from now on, a push/pop range
 * whose text is `name` (A, W, Ex, any domain; a registered string's text) calls begin() right
 * after its push and before it is recorded, and end() right after its pop is recorded, on the
 * thread that pushed it; one range at a time (a range of that name pushed while one is open is
 * an ordinary range). begin() may start a session and end() stop it. Call it once, before the
 * program makes NVTX calls (a preload's constructor); the name is copied. */
void strobe__nvtx_set_capture(const char *name, void (*begin)(void), void (*end)(void));

#endif /* STROBE_NVTX_H */
