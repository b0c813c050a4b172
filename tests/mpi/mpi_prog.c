/* mpi_prog.c: an MPI program with no strobe code, for `strobe record --mpi` (test_mpi_record.sh).
 * Rank r of W makes the calls below, with sizes and tags that check_mpi_trace.py works out again
 * from r and W alone:
 *   MPI_Send  100+r ints to (r+1)%W, tag 7+r;  MPI_Recv from (r-1)%W (its 100+left ints, tag
 * 7+left) MPI_Irecv 50 doubles from the left, tag 11; MPI_Isend 50 doubles to the right, tag 11;
 *   MPI_Waitall of the two
 *   MPI_Isend 10 chars to the right, tag 12; MPI_Irecv 10 chars from the left, tag 12; MPI_Wait
 *   each
 *   MPI_Irecv 4 ints from the left, tag 13, and 6 ints, tag 14; MPI_Isend 4 ints to the right,
 *   tag 13, and 6, tag 14; MPI_Waitany (the receives) twice; MPI_Waitall (the sends)
 *   MPI_Sendrecv 5 ints to the right, tag 15, 5 ints from the left, tag 15
 *   MPI_Send 3 ints to the right, tag 16; MPI_Probe the left's, tag 16; MPI_Recv it
 *   persistent: MPI_Recv_init 2 ints from the left, MPI_Send_init to the right, tag 17 (not
 *   recorded), then twice: MPI_Start each, MPI_Wait each; MPI_Request_free both
 *   MPI_Bcast 1000 ints from 0; MPI_Allreduce 256 doubles; MPI_Allgather 3 ints each; MPI_Alltoall
 *   2 ints each; MPI_Reduce 64 floats to root 1 (W > 1)
 *   MPI_Allreduce 8 doubles on the ranks of r's parity (MPI_Comm_split), then MPI_Comm_free
 *   BARRIERS MPI_Barrier calls, with a sleep of 1 ms after each
 * and checks the data it received (exit 1 when wrong). With the argument "thread" it starts with
 * MPI_Init_thread (MPI_THREAD_FUNNELED) instead of MPI_Init. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BARRIERS 20

static int fail(const char *what, int rank) {
    fprintf(stderr, "mpi_prog: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "thread") == 0) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    int r, w;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &w);
    int right = (r + 1) % w, left = (r - 1 + w) % w;

    int sbuf[200], rbuf[200];
    for (int i = 0; i < 200; i++)
        sbuf[i] = r * 1000 + i;
    MPI_Status st;
    if (r % 2 == 0) {
        MPI_Send(sbuf, 100 + r, MPI_INT, right, 7 + r, MPI_COMM_WORLD);
        MPI_Recv(rbuf, 200, MPI_INT, left, 7 + left, MPI_COMM_WORLD, &st);
    } else {
        MPI_Recv(rbuf, 200, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        MPI_Send(sbuf, 100 + r, MPI_INT, right, 7 + r, MPI_COMM_WORLD);
    }
    if (rbuf[5] != left * 1000 + 5) return fail("MPI_Recv data", r);

    double ds[50], dr[50];
    for (int i = 0; i < 50; i++)
        ds[i] = r + i * 0.5;
    MPI_Request q[2];
    MPI_Irecv(dr, 50, MPI_DOUBLE, left, 11, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(ds, 50, MPI_DOUBLE, right, 11, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    if (dr[4] != left + 2.0) return fail("MPI_Irecv data", r);

    char cs[10] = "abcdefghi", cr[10];
    MPI_Request a, b;
    MPI_Isend(cs, 10, MPI_CHAR, right, 12, MPI_COMM_WORLD, &a);
    MPI_Irecv(cr, 10, MPI_CHAR, left, 12, MPI_COMM_WORLD, &b);
    MPI_Wait(&a, MPI_STATUS_IGNORE);
    MPI_Wait(&b, MPI_STATUS_IGNORE);

    int s4[4] = {r, r, r, r}, s6[6] = {r, r, r, r, r, r}, r4[4], r6[6];
    MPI_Request rq[2], sq[2];
    MPI_Irecv(r4, 4, MPI_INT, left, 13, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(r6, 6, MPI_INT, left, 14, MPI_COMM_WORLD, &rq[1]);
    MPI_Isend(s4, 4, MPI_INT, right, 13, MPI_COMM_WORLD, &sq[0]);
    MPI_Isend(s6, 6, MPI_INT, right, 14, MPI_COMM_WORLD, &sq[1]);
    for (int k = 0; k < 2; k++) {
        int idx;
        MPI_Waitany(2, rq, &idx, MPI_STATUS_IGNORE);
    }
    MPI_Waitall(2, sq, MPI_STATUSES_IGNORE);
    if (r4[3] != left || r6[5] != left) return fail("MPI_Waitany data", r);
    int sr[5] = {r, r, r, r, r}, rr[5];
    MPI_Sendrecv(sr, 5, MPI_INT, right, 15, rr, 5, MPI_INT, left, 15, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    if (rr[0] != left) return fail("MPI_Sendrecv data", r);

    int p3[3] = {r, r, r}, q3[3];
    MPI_Send(p3, 3, MPI_INT, right, 16, MPI_COMM_WORLD);
    MPI_Probe(left, 16, MPI_COMM_WORLD, &st);
    MPI_Recv(q3, 3, MPI_INT, left, 16, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (q3[2] != left) return fail("MPI_Probe data", r);

    int ps[2] = {r, r}, pr[2];
    MPI_Request preq[2];
    MPI_Recv_init(pr, 2, MPI_INT, left, 17, MPI_COMM_WORLD, &preq[0]);
    MPI_Send_init(ps, 2, MPI_INT, right, 17, MPI_COMM_WORLD, &preq[1]);
    for (int k = 0; k < 2; k++) {
        MPI_Start(&preq[0]);
        MPI_Start(&preq[1]);
        MPI_Wait(&preq[0], MPI_STATUS_IGNORE);
        MPI_Wait(&preq[1], MPI_STATUS_IGNORE);
        if (pr[1] != left) return fail("persistent data", r);
    }
    MPI_Request_free(&preq[0]);
    MPI_Request_free(&preq[1]);

    int big[1000];
    for (int i = 0; i < 1000; i++)
        big[i] = r == 0 ? i : -1;
    MPI_Bcast(big, 1000, MPI_INT, 0, MPI_COMM_WORLD);
    if (big[999] != 999) return fail("MPI_Bcast data", r);

    double x[256], y[256];
    for (int i = 0; i < 256; i++)
        x[i] = 1.0;
    MPI_Allreduce(x, y, 256, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (y[0] != (double)w) return fail("MPI_Allreduce data", r);

    int g3[3] = {r, r, r};
    int *ga = malloc(sizeof(int) * 3 * (size_t)w);
    MPI_Allgather(g3, 3, MPI_INT, ga, 3, MPI_INT, MPI_COMM_WORLD);
    if (ga[3 * (w - 1)] != w - 1) return fail("MPI_Allgather data", r);

    int *as = malloc(sizeof(int) * 2 * (size_t)w), *ar = malloc(sizeof(int) * 2 * (size_t)w);
    for (int i = 0; i < 2 * w; i++)
        as[i] = r;
    MPI_Alltoall(as, 2, MPI_INT, ar, 2, MPI_INT, MPI_COMM_WORLD);
    if (ar[2 * left] != left) return fail("MPI_Alltoall data", r);

    if (w > 1) {
        float f[64], fr[64];
        for (int i = 0; i < 64; i++)
            f[i] = 1.0f;
        MPI_Reduce(f, fr, 64, MPI_FLOAT, MPI_SUM, 1, MPI_COMM_WORLD);
        if (r == 1 && fr[0] != (float)w) return fail("MPI_Reduce data", r);
    }

    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
    MPI_Allreduce(x, y, 8, MPI_DOUBLE, MPI_SUM, half);
    if (y[0] != (double)((w - r % 2 + 1) / 2)) return fail("MPI_Allreduce (split) data", r);
    MPI_Comm_free(&half);

    for (int i = 0; i < BARRIERS; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    free(ga);
    free(as);
    free(ar);
    MPI_Finalize();
    return 0;
}
