/* A small PARMACS program in the style of the SPLASH-2 kernels, used to test the capture tool:
 * threads created with CREATE, a shared arena from G_MALLOC, a 3-point stencil over a
 * partitioned array between BARRIERs, a LOCK-protected reduction, and GETSUB work
 * distribution.   usage: stencil [P [N [STEPS]]] */
MAIN_ENV
#include <stdio.h>
#include <stdlib.h>

struct GlobalMemory {
  LOCKDEC(idlock)
  LOCKDEC(sumlock)
  BARDEC(start)
  GSDEC(rows)
  long id;
  double sum;
};
struct GlobalMemory *Global;
double *A, *B;
long N = 4096, P = 4, STEPS = 4;

void worker(void) {
  long id, i, s, lo, hi, row;
  double local = 0;
  LOCK(Global->idlock)
  id = Global->id++;
  UNLOCK(Global->idlock)
  lo = id * N / P;
  hi = (id + 1) * N / P;
  BARRIER(Global->start, P)
  ROI_BEGIN
  for (s = 0; s < STEPS; s++) {
    double *from = (s & 1) ? B : A, *to = (s & 1) ? A : B;
    for (i = lo; i < hi; i++) {
      double l = i > 0 ? from[i - 1] : 0, r = i < N - 1 ? from[i + 1] : 0;
      to[i] = 0.25 * l + 0.5 * from[i] + 0.25 * r;
    }
    BARRIER(Global->start, P)
  }
  for (i = lo; i < hi; i++) local += A[i];
  LOCK(Global->sumlock)
  Global->sum += local;
  UNLOCK(Global->sumlock)
  for (;;) {
    GETSUB(Global->rows, row, 63, P)
    if (row < 0) break;
    B[row] = (double)row;
  }
  ROI_END
  BARRIER(Global->start, P)
}

int main(int argc, char **argv) {
  long i;
  if (argc > 1) P = atol(argv[1]);
  if (argc > 2) N = atol(argv[2]);
  if (argc > 3) STEPS = atol(argv[3]);
  MAIN_INITENV(,)
  Global = (struct GlobalMemory *) G_MALLOC(sizeof(struct GlobalMemory));
  A = (double *) G_MALLOC(N * sizeof(double));
  B = (double *) G_MALLOC(N * sizeof(double));
  LOCKINIT(Global->idlock)
  LOCKINIT(Global->sumlock)
  BARINIT(Global->start)
  GSINIT(Global->rows)
  Global->id = 0;
  Global->sum = 0;
  for (i = 0; i < N; i++) {
    A[i] = (double)i;
    B[i] = 0;
  }
  for (i = 1; i < P; i++) CREATE(worker)
  worker();
  WAIT_FOR_END(P - 1)
  printf("sum %.1f\n", Global->sum);
  MAIN_END
}
