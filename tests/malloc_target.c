/* malloc_target.c: a plain program (no strobe calls) for the LD_PRELOAD interposer test
 * (test_malloc_preload.sh). Two threads each allocate blocks of their own known sizes with
 * malloc, calloc, realloc and posix_memalign, ROUNDS times, and free them all. It prints what a
 * trace of it must hold: one "alloc USABLE THREAD" line per block (the interposer records
 * malloc_usable_size, not the size asked for, and an aligned block's usable size may change from
 * round to round), then "threads 2". */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 50
#define KINDS 5

/* Sizes far from what libc and the loader allocate; a thread's sizes are 1000 bytes apart from
 * the other's, so that usable sizes stay distinct. Kinds: malloc, calloc, realloc's source and
 * target, posix_memalign. */
static const size_t sizes[2][KINDS] = {{21001, 23003, 25005, 27007, 29009},
                                       {22001, 24003, 26005, 28007, 30009}};
static size_t usable[2][ROUNDS][KINDS];

static void *work(void *arg) {
    int t = (int)(size_t)arg;
    const size_t *sz = sizes[t];
    for (int i = 0; i < ROUNDS; i++) {
        char *a = malloc(sz[0]);
        char *b = calloc(1, sz[1]);
        char *c = malloc(sz[2]);
        void *d = NULL;
        if (a == NULL || b == NULL || c == NULL || posix_memalign(&d, 64, sz[4]) != 0) {
            fprintf(stderr, "malloc_target: allocation failed\n");
            exit(1);
        }
        memset(a, 1, sz[0]);
        memset(c, 2, sz[2]);
        if (b[sz[1] - 1] != 0 || ((size_t)d & 63) != 0) {
            fprintf(stderr, "malloc_target: calloc not zeroed or posix_memalign misaligned\n");
            exit(1);
        }
        size_t uc = malloc_usable_size(c);
        char *c2 = realloc(c, sz[3]);
        if (c2 == NULL || c2[sz[2] - 1] != 2) {
            fprintf(stderr, "malloc_target: realloc lost the contents\n");
            exit(1);
        }
        usable[t][i][0] = malloc_usable_size(a);
        usable[t][i][1] = malloc_usable_size(b);
        usable[t][i][2] = uc;
        usable[t][i][3] = malloc_usable_size(c2);
        usable[t][i][4] = malloc_usable_size(d);
        free(a);
        free(b);
        free(c2);
        free(d);
    }
    return NULL;
}

int main(void) {
    pthread_t th[2];
    for (int t = 0; t < 2; t++) {
        if (pthread_create(&th[t], NULL, work, (void *)(size_t)t) != 0) {
            fprintf(stderr, "malloc_target: pthread_create failed\n");
            return 1;
        }
    }
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < ROUNDS; i++)
            for (int k = 0; k < KINDS; k++)
                printf("alloc %zu %d\n", usable[t][i][k], t);
    printf("threads 2\n");
    return 0;
}
