/* A second PARMACS kernel for the capture tool: a producer hands a buffer to the other
 * threads through PAUSE flags (SETPAUSE / WAITPAUSE), every thread updates a histogram whose
 * buckets are guarded by an array of locks (ALOCK), and at the end of each round the threads
 * wait for one another on a condition variable (CONDVARWAIT under a lock named with AGETL): the
 * last to arrive signals, and each woken thread signals the next (P signals and P-1 waits a
 * round), as BARNES, FMM and CHOLESKY use them.
 * COPY, if given, is the size of one memcpy between two shared buffers at the end (the capture
 * splits a copy over 64 KiB into records of at most 64 KiB, each at its own address).
 * ALLOCS further small shared allocations (as WATER-NSQUARED makes by the ten thousand), each
 * written once, check that the capture keeps every one.
 *   usage: pipeline [P [N [ROUNDS [ALLOCS [COPY]]]]] */
MAIN_ENV
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 16
struct GlobalMemory {
  LOCKDEC(idlock)
  ALOCKDEC(hlock, BUCKETS)
  BARDEC(start)
  PAUSEDEC(ready)
  ALOCKDEC(cvlock, 1)
  CONDVARDEC(allin)
  long arrived;
  long id;
  long hist[BUCKETS];
};
struct GlobalMemory *Global;
long *Buf;
long N = 2048, P = 4, ROUNDS = 3, ALLOCS = 0, COPY = 0;

void worker(void) {
  long id, r, i;
  LOCK(Global->idlock)
  id = Global->id++;
  UNLOCK(Global->idlock)
  BARRIER(Global->start, P)
  for (r = 0; r < ROUNDS; r++) {
    if (id == 0) {
      for (i = 0; i < N; i++) Buf[i] = (i * 7 + r) % 101;
      SETPAUSE(Global->ready)
    } else {
      WAITPAUSE(Global->ready)
    }
    for (i = id; i < N; i += P) {
      long b = Buf[i] % BUCKETS;
      ALOCK(Global->hlock, b)
      Global->hist[b]++;
      AULOCK(Global->hlock, b)
    }
    ALOCK(Global->cvlock, 0)
    Global->arrived++;
    if (Global->arrived == P * (r + 1)) {
      CONDVARSIGNAL(Global->allin)
    } else {
      while (Global->arrived < P * (r + 1)) CONDVARWAIT(Global->allin, AGETL(Global->cvlock, 0))
      CONDVARSIGNAL(Global->allin)
    }
    AULOCK(Global->cvlock, 0)
    BARRIER(Global->start, P)
    if (id == 0) CLEARPAUSE(Global->ready)
    BARRIER(Global->start, P)
  }
}

int main(int argc, char **argv) {
  long i, total = 0;
  if (argc > 1) P = atol(argv[1]);
  if (argc > 2) N = atol(argv[2]);
  if (argc > 3) ROUNDS = atol(argv[3]);
  if (argc > 4) ALLOCS = atol(argv[4]);
  if (argc > 5) COPY = atol(argv[5]);
  MAIN_INITENV(,)
  Global = (struct GlobalMemory *) G_MALLOC(sizeof(struct GlobalMemory));
  Buf = (long *) G_MALLOC(N * sizeof(long));
  LOCKINIT(Global->idlock)
  ALOCKINIT(Global->hlock, BUCKETS)
  BARINIT(Global->start)
  PAUSEINIT(Global->ready)
  ALOCKINIT(Global->cvlock, 1)
  CONDVARINIT(Global->allin)
  Global->arrived = 0;
  Global->id = 0;
  for (i = 0; i < BUCKETS; i++) Global->hist[i] = 0;
  for (i = 0; i < ALLOCS; i++) {
    long *x = (long *) G_MALLOC(sizeof(long));
    *x = i;
  }
  for (i = 1; i < P; i++) CREATE(worker)
  worker();
  WAIT_FOR_END(P - 1)
  if (COPY > 0) {
    char *from = (char *) G_MALLOC(COPY);
    char *to = (char *) G_MALLOC(COPY);
    memcpy(to, from, COPY);
  }
  for (i = 0; i < BUCKETS; i++) total += Global->hist[i];
  printf("counted %ld of %ld\n", total, N * ROUNDS);
  MAIN_END
}
