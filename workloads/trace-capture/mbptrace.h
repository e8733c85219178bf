/* mbptrace: the runtime behind the PARMACS macros of c.m4.mbptrace (traces/FORMAT.md,
 * workloads/trace-capture/README.md). C, so PARMACS C programs can use it unchanged. */
#ifndef MBPTRACE_H
#define MBPTRACE_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  pthread_mutex_t m;
  uint64_t order; /* acquisitions so far: the captured order of the next one */
} mbpt_lock_t;

typedef struct {
  pthread_mutex_t m;
  pthread_cond_t c;
  unsigned long count;
  uint64_t episode;
} mbpt_barrier_t;

typedef struct {
  pthread_mutex_t m;
  pthread_cond_t c;
  int flag;
  uint64_t wakes; /* SETPAUSE broadcasts so far */
} mbpt_pause_t;

void mbpt_init(void);
void mbpt_finish(void);
void *mbpt_malloc(size_t bytes);
void mbpt_create(void (*fn)(void));
void mbpt_wait_for_end(long n);
void mbpt_lock_init(mbpt_lock_t *l);
void mbpt_lock(mbpt_lock_t *l);
void mbpt_unlock(mbpt_lock_t *l);
void mbpt_barrier_init(mbpt_barrier_t *b);
void mbpt_barrier(mbpt_barrier_t *b, long participants);
void mbpt_pause_init(mbpt_pause_t *p);
void mbpt_setpause(mbpt_pause_t *p);
void mbpt_clearpause(mbpt_pause_t *p);
void mbpt_waitpause(mbpt_pause_t *p);
void mbpt_roi(int begin);
unsigned long mbpt_clock_us(void);

#ifdef __cplusplus
}
#endif
#endif
