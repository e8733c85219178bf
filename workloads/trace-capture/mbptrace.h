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

/* Every object's sequence numbers (acquisitions, episodes, wake-ups) live in the runtime,
 * per address, not in the object: a program that initialises an object again at the same
 * address (BARNES re-creates its cells, and their condition variables, every time step)
 * continues its numbering, as the trace's objects are named by address (traces/FORMAT.md). */
struct mbpt_waiter;
typedef struct {
  pthread_mutex_t m;
  uint64_t *order; /* acquisitions so far at this address: the captured order of the next one */
  uint64_t released_at; /* the releaser's logical time (instructions) at the last release */
  int released_by;      /* its thread, -1 before the first release */
} mbpt_lock_t;

typedef struct {
  pthread_mutex_t m;
  pthread_cond_t c;
  unsigned long count;
  uint64_t *episode; /* episodes so far at this address */
  uint64_t latest;   /* the latest logical time of this episode's arrivals */
  struct mbpt_waiter *waiters;
} mbpt_barrier_t;

typedef struct {
  pthread_mutex_t m;
  pthread_cond_t c;
  int flag;
  uint64_t *wakes; /* SETPAUSE broadcasts so far at this address */
  uint64_t set_at; /* the setter's logical time */
  struct mbpt_waiter *waiters;
} mbpt_pause_t;

/* A condition variable (CONDVARDEC): waiters queue oldest first, so each wait knows the
 * wake-up (signal or broadcast number) that woke it, as the trace's cwait records say. */
typedef struct {
  pthread_mutex_t m;
  uint64_t *wakes; /* signals and broadcasts so far at this address: the number of the next one */
  struct mbpt_waiter *head, *tail;
} mbpt_cond_t;

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
void mbpt_cond_init(mbpt_cond_t *c);
void mbpt_cond_wait(mbpt_cond_t *c, mbpt_lock_t *l);
void mbpt_cond_signal(mbpt_cond_t *c);
void mbpt_cond_broadcast(mbpt_cond_t *c);
void mbpt_roi(int begin);
unsigned long mbpt_clock_us(void);

#ifdef __cplusplus
}
#endif
#endif
