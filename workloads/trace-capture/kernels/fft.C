/* A PARMACS kernel with the sharing pattern of SPLASH-2's FFT, written for the project from
 * the textbook algorithm (Bailey's six-step FFT), used by the replay benchmarks and tests.
 * The N = 2^M complex points are a sqrt(N) x sqrt(N) matrix whose rows are split among the
 * threads: transpose (all-to-all), one FFT of length sqrt(N) per own row, a twiddle
 * multiplication by W_N^(row*col), transpose, row FFTs, transpose, with a BARRIER between
 * the phases. The program checks itself (exit status 1 if wrong): four outputs of the
 * forward transform must equal a direct DFT's, and with INVERSE 1 (as SPLASH-2's -t) the
 * inverse transform of the result, run after the region of interest, must give the input.
 *   usage: fft [P [M [INVERSE]]]     P threads (dividing sqrt(N)), M even, 2^M points */
MAIN_ENV
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECKS 4
struct GlobalMemory {
  LOCKDEC(idlock)
  BARDEC(start)
  long id;
  double dft_err;   /* the largest difference from a direct DFT at the check points */
};
struct GlobalMemory *Global;
double *X, *Y;    /* the data and the transpose's destination: rootN x rootN complex, row-major */
double *Tw;       /* W_N^(row*col) for the twiddle step, each thread's rows written by it */
double *Roots;    /* W_rootN^k, k < rootN/2, for the row FFTs: written once, read by all */
long P = 4, M = 16, N, rootN, Inverse = 0;
long Check[CHECKS];       /* output indices compared with a direct DFT */
double Direct[CHECKS][2];

/* The input: a deterministic function of the index, so the check needs no copy. */
static double input(long i, int imag) {
  unsigned long z = (unsigned long)i * 2654435761UL + (imag ? 0x9e3779b9UL : 12345UL);
  z ^= z >> 13;
  z *= 0x5bd1e995UL;
  z ^= z >> 15;
  return (double)(z % 20011UL) / 20011.0 - 0.5;
}

/* dst rows lo..hi-1 = the transpose of src, in 8 x 8 tiles to keep the reads together */
static void transpose(double *src, double *dst, long lo, long hi) {
  long r0, c0, r, c;
  for (r0 = lo; r0 < hi; r0 += 8)
    for (c0 = 0; c0 < rootN; c0 += 8)
      for (r = r0; r < r0 + 8 && r < hi; r++)
        for (c = c0; c < c0 + 8 && c < rootN; c++) {
          dst[2 * (r * rootN + c)] = src[2 * (c * rootN + r)];
          dst[2 * (r * rootN + c) + 1] = src[2 * (c * rootN + r) + 1];
        }
}

/* In-place radix-2 FFT of one row of length rootN; dir 1 forward, -1 inverse (conjugate roots). */
static void row_fft(double *a, int dir) {
  long i, j, k, len, half, step;
  for (i = 1, j = 0; i < rootN; i++) {
    long bit = rootN >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      double t = a[2 * i]; a[2 * i] = a[2 * j]; a[2 * j] = t;
      t = a[2 * i + 1]; a[2 * i + 1] = a[2 * j + 1]; a[2 * j + 1] = t;
    }
  }
  for (len = 2; len <= rootN; len <<= 1) {
    half = len >> 1;
    step = rootN / len;
    for (i = 0; i < rootN; i += len)
      for (k = 0; k < half; k++) {
        double wr = Roots[2 * k * step], wi = dir * Roots[2 * k * step + 1];
        double *u = a + 2 * (i + k), *v = a + 2 * (i + k + half);
        double tr = v[0] * wr - v[1] * wi, ti = v[0] * wi + v[1] * wr;
        v[0] = u[0] - tr; v[1] = u[1] - ti;
        u[0] += tr; u[1] += ti;
      }
  }
}

/* One transform of X (result in Y, natural order), by the rows lo..hi-1 of this thread. */
static void six_step(long lo, long hi, int dir) {
  long r, c;
  transpose(X, Y, lo, hi);
  BARRIER(Global->start, P)
  for (r = lo; r < hi; r++) {
    double *row = Y + 2 * r * rootN;
    row_fft(row, dir);
    for (c = 0; c < rootN; c++) {
      double wr = Tw[2 * (r * rootN + c)], wi = dir * Tw[2 * (r * rootN + c) + 1];
      double a = row[2 * c], b = row[2 * c + 1];
      row[2 * c] = a * wr - b * wi;
      row[2 * c + 1] = a * wi + b * wr;
    }
  }
  BARRIER(Global->start, P)
  transpose(Y, X, lo, hi);
  BARRIER(Global->start, P)
  for (r = lo; r < hi; r++) row_fft(X + 2 * r * rootN, dir);
  BARRIER(Global->start, P)
  transpose(X, Y, lo, hi);
  BARRIER(Global->start, P)
}

void worker(void) {
  long id, r, c, i;
  LOCK(Global->idlock)
  id = Global->id++;
  UNLOCK(Global->idlock)
  long lo = id * (rootN / P), hi = lo + rootN / P;
  for (r = lo; r < hi; r++)
    for (c = 0; c < rootN; c++) {
      double a = -2.0 * M_PI * (double)(r * c) / (double)N;
      Tw[2 * (r * rootN + c)] = cos(a);
      Tw[2 * (r * rootN + c) + 1] = sin(a);
      X[2 * (r * rootN + c)] = input(r * rootN + c, 0);
      X[2 * (r * rootN + c) + 1] = input(r * rootN + c, 1);
    }
  BARRIER(Global->start, P)
  ROI_BEGIN
  six_step(lo, hi, 1);
  ROI_END
  for (i = 0; i < CHECKS; i++)
    if (Check[i] >= lo * rootN && Check[i] < hi * rootN) {
      double dr = fabs(Y[2 * Check[i]] - Direct[i][0]), di = fabs(Y[2 * Check[i] + 1] - Direct[i][1]);
      LOCK(Global->idlock)
      if (dr > Global->dft_err) Global->dft_err = dr;
      if (di > Global->dft_err) Global->dft_err = di;
      UNLOCK(Global->idlock)
    }
  if (!Inverse) return;
  /* The inverse transform of the result, scaled by 1/N, must give the input back. */
  for (i = lo * rootN; i < hi * rootN; i++) {
    X[2 * i] = Y[2 * i] / (double)N;
    X[2 * i + 1] = Y[2 * i + 1] / (double)N;
  }
  BARRIER(Global->start, P)
  six_step(lo, hi, -1);
}

int main(int argc, char **argv) {
  long i;
  double err = 0;
  if (argc > 1) P = atol(argv[1]);
  if (argc > 2) M = atol(argv[2]);
  if (argc > 3) Inverse = atol(argv[3]);
  if (M < 2 || M > 28 || M % 2) {
    fprintf(stderr, "fft: M must be even, 2..28\n");
    return 2;
  }
  N = 1L << M;
  rootN = 1L << (M / 2);
  if (P < 1 || rootN % P) {
    fprintf(stderr, "fft: P must divide sqrt(N) = %ld\n", rootN);
    return 2;
  }
  MAIN_INITENV(,)
  Global = (struct GlobalMemory *) G_MALLOC(sizeof(struct GlobalMemory));
  X = (double *) G_MALLOC(2 * N * sizeof(double));
  Y = (double *) G_MALLOC(2 * N * sizeof(double));
  Tw = (double *) G_MALLOC(2 * N * sizeof(double));
  Roots = (double *) G_MALLOC(rootN * sizeof(double));
  LOCKINIT(Global->idlock)
  BARINIT(Global->start)
  Global->id = 0;
  Global->dft_err = 0;
  Check[0] = 1; Check[1] = 7; Check[2] = N / 3; Check[3] = N - 1;
  for (i = 0; i < CHECKS; i++) {  /* X[k] = sum_j x[j] W_N^(jk), W_N = e^(-2 pi i / N) */
    long j;
    Direct[i][0] = Direct[i][1] = 0;
    for (j = 0; j < N; j++) {
      double a = -2.0 * M_PI * (double)((j * Check[i]) % N) / (double)N, c = cos(a), s = sin(a);
      Direct[i][0] += input(j, 0) * c - input(j, 1) * s;
      Direct[i][1] += input(j, 0) * s + input(j, 1) * c;
    }
  }
  for (i = 0; i < rootN / 2; i++) {
    Roots[2 * i] = cos(-2.0 * M_PI * (double)i / (double)rootN);
    Roots[2 * i + 1] = sin(-2.0 * M_PI * (double)i / (double)rootN);
  }
  for (i = 1; i < P; i++) CREATE(worker)
  worker();
  WAIT_FOR_END(P - 1)
  for (i = 0; Inverse && i < N; i++) {
    double dr = Y[2 * i] - input(i, 0), di = Y[2 * i + 1] - input(i, 1);
    if (fabs(dr) > err) err = fabs(dr);
    if (fabs(di) > err) err = fabs(di);
  }
  printf("fft 2^%ld points, %ld threads: forward - direct DFT = %.3g", M, P, Global->dft_err);
  if (Inverse) printf(", inverse(forward(x)) - x = %.3g", err);
  printf("\n");
  if (!(err < 1e-9) || !(Global->dft_err < 1e-6)) {
    printf("fft: FAILED\n");
    return 1;
  }
  MAIN_END
}
