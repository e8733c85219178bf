/* A PARMACS kernel with the sharing pattern of SPLASH-2's LU (contiguous blocks), written for
 * the project from the textbook blocked right-looking LU factorisation without pivoting, used
 * by the replay benchmarks and tests. The n x n matrix is stored block by block (each B x B
 * block contiguous); block (I, J) belongs to thread (I mod pr) * pc + (J mod pc) of a pr x pc
 * grid (P = pr * pc), which initialises it. Step k: the owner of the diagonal block factors
 * it; the owners of row k's and column k's blocks solve against it; every owner of a block
 * below and right of it subtracts the product of its row and column blocks. A BARRIER
 * separates the three phases. The matrix is diagonally dominant, so no pivoting is needed;
 * the self-check solves A x = A 1 with the factors and needs x = 1 (exit status 1 if not).
 *   usage: lu [P [n [B]]]     B divides n */
MAIN_ENV
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct GlobalMemory {
  LOCKDEC(idlock)
  BARDEC(start)
  long id;
};
struct GlobalMemory *Global;
double *A;       /* the blocks: block (I, J) at A + (I * nb + J) * B * B, row-major inside */
double *Rhs;     /* A times a vector of ones, for the check */
long P = 4, n = 128, B = 16, nb, pr, pc;

static double *block(long I, long J) { return A + (I * nb + J) * B * B; }
static long owner(long I, long J) { return (I % pr) * pc + (J % pc); }

static double element(long i, long j) {
  unsigned long z = (unsigned long)(i * 7919 + j * 104729 + 1);
  z ^= z >> 11;
  z *= 0x9e3779b97f4a7c15UL;
  z ^= z >> 29;
  double v = (double)(z % 1000UL) / 1000.0;
  return i == j ? v + (double)n : v;
}

/* The diagonal block: a = L U in place (L unit lower triangular). */
static void factor(double *a) {
  long i, j, k;
  for (k = 0; k < B; k++)
    for (i = k + 1; i < B; i++) {
      a[i * B + k] /= a[k * B + k];
      for (j = k + 1; j < B; j++) a[i * B + j] -= a[i * B + k] * a[k * B + j];
    }
}

/* A block right of the diagonal: b = L^-1 b, L the unit lower triangle of d. */
static void solve_row(const double *d, double *b) {
  long i, j, k;
  for (k = 0; k < B; k++)
    for (i = k + 1; i < B; i++)
      for (j = 0; j < B; j++) b[i * B + j] -= d[i * B + k] * b[k * B + j];
}

/* A block below the diagonal: b = b U^-1, U the upper triangle of d. */
static void solve_col(const double *d, double *b) {
  long i, j, k;
  for (i = 0; i < B; i++)
    for (k = 0; k < B; k++) {
      b[i * B + k] /= d[k * B + k];
      for (j = k + 1; j < B; j++) b[i * B + j] -= b[i * B + k] * d[k * B + j];
    }
}

/* c -= a b */
static void update(const double *a, const double *b, double *c) {
  long i, j, k;
  for (i = 0; i < B; i++)
    for (k = 0; k < B; k++) {
      double f = a[i * B + k];
      for (j = 0; j < B; j++) c[i * B + j] -= f * b[k * B + j];
    }
}

void worker(void) {
  long id, I, J, K, i, j;
  LOCK(Global->idlock)
  id = Global->id++;
  UNLOCK(Global->idlock)
  for (I = 0; I < nb; I++)
    for (J = 0; J < nb; J++)
      if (owner(I, J) == id)
        for (i = 0; i < B; i++)
          for (j = 0; j < B; j++) block(I, J)[i * B + j] = element(I * B + i, J * B + j);
  BARRIER(Global->start, P)
  ROI_BEGIN
  for (K = 0; K < nb; K++) {
    if (owner(K, K) == id) factor(block(K, K));
    BARRIER(Global->start, P)
    for (J = K + 1; J < nb; J++)
      if (owner(K, J) == id) solve_row(block(K, K), block(K, J));
    for (I = K + 1; I < nb; I++)
      if (owner(I, K) == id) solve_col(block(K, K), block(I, K));
    BARRIER(Global->start, P)
    for (I = K + 1; I < nb; I++)
      for (J = K + 1; J < nb; J++)
        if (owner(I, J) == id) update(block(I, K), block(K, J), block(I, J));
    BARRIER(Global->start, P)
  }
  ROI_END
}

static double at(long i, long j) { return block(i / B, j / B)[(i % B) * B + j % B]; }

int main(int argc, char **argv) {
  long i, j;
  double err = 0;
  if (argc > 1) P = atol(argv[1]);
  if (argc > 2) n = atol(argv[2]);
  if (argc > 3) B = atol(argv[3]);
  if (P < 1 || B < 1 || n < B || n % B) {
    fprintf(stderr, "lu: need P >= 1 and a block size B dividing n\n");
    return 2;
  }
  for (pr = (long)sqrt((double)P); P % pr; pr--) {}
  pc = P / pr;
  nb = n / B;
  MAIN_INITENV(,)
  Global = (struct GlobalMemory *) G_MALLOC(sizeof(struct GlobalMemory));
  A = (double *) G_MALLOC(n * n * sizeof(double));
  Rhs = (double *) G_MALLOC(n * sizeof(double));
  LOCKINIT(Global->idlock)
  BARINIT(Global->start)
  Global->id = 0;
  for (i = 0; i < n; i++) {
    Rhs[i] = 0;
    for (j = 0; j < n; j++) Rhs[i] += element(i, j);
  }
  for (i = 1; i < P; i++) CREATE(worker)
  worker();
  WAIT_FOR_END(P - 1)
  /* L y = Rhs, then U x = y, in place in Rhs. */
  for (i = 0; i < n; i++)
    for (j = 0; j < i; j++) Rhs[i] -= at(i, j) * Rhs[j];
  for (i = n - 1; i >= 0; i--) {
    for (j = i + 1; j < n; j++) Rhs[i] -= at(i, j) * Rhs[j];
    Rhs[i] /= at(i, i);
  }
  for (i = 0; i < n; i++)
    if (fabs(Rhs[i] - 1.0) > err) err = fabs(Rhs[i] - 1.0);
  printf("lu %ld x %ld, blocks %ld, %ld threads: max |x - 1| = %.3g\n", n, n, B, P, err);
  if (!(err < 1e-9)) {
    printf("lu: FAILED\n");
    return 1;
  }
  MAIN_END
}
