/* mbptrace runtime: records a PARMACS program's shared-memory references and synchronisation
 * in the binary-gzip trace format of traces/FORMAT.md.
 *
 * - Shared allocations (G_MALLOC) come from one arena mapped at a fixed address, so shared
 *   addresses repeat from run to run and from build to build.
 * - The application's objects are compiled with -fsanitize=thread; this file implements the
 *   __tsan_* hooks GCC emits (instead of libtsan) and records only accesses inside the arena.
 *   Every other instrumented access counts toward the compute gap: gap = 3 x private accesses
 *   (loads and stores are about a third of the instructions of SPLASH-2 codes).
 * - memcpy/memset/memmove are wrapped at link time (-Wl,--wrap=...).
 * - Each thread fills its own buffer and writes its own stream; nothing is shared on the
 *   recording path but the arena bounds, which are fixed after start-up.
 * This file must NOT be compiled with -fsanitize=thread. */
#define _GNU_SOURCE
#include "mbptrace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <zlib.h>

#define ARENA_BASE 0x100000000000ull /* 16 TiB: clear of the heap, stacks and libraries */
#define MAX_THREADS 1024
#define MAX_ACCESS 65536u /* the format's largest memory record */
#define GAP_PER_PRIVATE 3

enum { K_LOAD = 1, K_STORE, K_RMW, K_CREATE, K_JOIN, K_BEGIN, K_END, K_BARRIER, K_ACQUIRE, K_RELEASE,
       K_POST, K_WAIT, K_CWAIT, K_SIGNAL, K_BROADCAST, K_FENCE, K_ROI_BEGIN, K_ROI_END, K_ALLOC };

typedef struct {
  int id;
  gzFile out;
  uint64_t records, prev, gap;
  size_t n;
  unsigned char buf[1 << 16];
} thread_t;

static uintptr_t arena_limit = 0; /* bytes mapped; 0 until mbpt_init */
static size_t arena_used = 0;
static pthread_mutex_t global = PTHREAD_MUTEX_INITIALIZER;
static int next_id = 0;
static pthread_t tids[MAX_THREADS];
static int joined_upto = 1;
static char out_dir[4096] = "mbptrace.out";
static struct alloc { uint64_t addr, size; } *allocs = NULL; /* every shared allocation, for trace.meta */
static size_t nallocs = 0, allocs_cap = 0;
static __thread thread_t *self = NULL;

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("mbptrace: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

/* ---------------------------------------------------------------- the binary stream */

static void flush(thread_t *t) {
  if (t->n && gzwrite(t->out, t->buf, (unsigned)t->n) != (int)t->n) die("writing the stream of thread %d failed", t->id);
  t->n = 0;
}
static inline void byte(thread_t *t, unsigned char b) { t->buf[t->n++] = b; }
static inline void varint(thread_t *t, uint64_t v) {
  while (v >= 0x80) {
    byte(t, (unsigned char)(v | 0x80));
    v >>= 7;
  }
  byte(t, (unsigned char)v);
}
static inline void address(thread_t *t, uint64_t a) {
  const int64_t d = (int64_t)(a - t->prev);
  varint(t, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
  t->prev = a;
}
/* One record: kind, gap, then the kind's fields (FORMAT.md order). */
static void rec(thread_t *t, int kind, uint64_t addr, uint64_t size, int op, uint64_t thread, uint64_t count, uint64_t seq) {
  if (t->n > sizeof t->buf - 64) flush(t);
  byte(t, (unsigned char)kind);
  varint(t, t->gap);
  t->gap = 0;
  switch (kind) {
    case K_LOAD: case K_STORE: case K_ALLOC: address(t, addr); varint(t, size); break;
    case K_RMW: address(t, addr); varint(t, size); byte(t, (unsigned char)op); break;
    case K_CREATE: case K_JOIN: varint(t, thread); break;
    case K_BARRIER: address(t, addr); varint(t, count); varint(t, seq); break;
    case K_RELEASE: address(t, addr); break;
    case K_ACQUIRE: case K_POST: case K_WAIT: case K_CWAIT: case K_SIGNAL: case K_BROADCAST:
      address(t, addr); varint(t, seq); break;
    default: break;
  }
  ++t->records;
}

static thread_t *open_thread(int id) {
  thread_t *t = calloc(1, sizeof *t);
  if (!t) die("out of memory");
  t->id = id;
  char path[4200];
  snprintf(path, sizeof path, "%s/thread-%d.bin.gz", out_dir, id);
  t->out = gzopen(path, "wb1");
  if (!t->out) die("cannot create %s: %s", path, strerror(errno));
  static const unsigned char magic[6] = {'M', 'B', 'P', 'T', 'S', 1};
  memcpy(t->buf, magic, 6);
  t->n = 6;
  varint(t, (uint64_t)id);
  return t;
}

static void close_thread(thread_t *t) {
  rec(t, K_END, 0, 0, 0, 0, 0, 0);
  byte(t, 0);
  varint(t, t->records);
  flush(t);
  if (gzclose(t->out) != Z_OK) die("closing the stream of thread %d failed", t->id);
  free(t);
}

/* ---------------------------------------------------------------- memory references */

static inline int in_arena(uintptr_t a) { return a - ARENA_BASE < arena_limit; }

static inline void mem_access(const void *p, uint64_t size, int kind) {
  thread_t *t = self;
  if (!t) return;
  const uintptr_t a = (uintptr_t)p;
  if (!in_arena(a)) {
    t->gap += GAP_PER_PRIVATE;
    return;
  }
  while (size > MAX_ACCESS) {
    rec(t, kind, a, MAX_ACCESS, 0, 0, 0, 0);
    size -= MAX_ACCESS;
    p = (const char *)p + MAX_ACCESS;
  }
  if (size) rec(t, kind, (uintptr_t)p, size, 0, 0, 0, 0);
}
static inline void rmw(const volatile void *p, uint64_t size, int op) {
  thread_t *t = self;
  if (!t) return;
  if (!in_arena((uintptr_t)p)) {
    t->gap += GAP_PER_PRIVATE;
    return;
  }
  rec(t, K_RMW, (uintptr_t)p, size, op, 0, 0, 0);
}

#define HOOKS(n)                                                                   \
  void __tsan_read##n(void *p) { mem_access(p, n, K_LOAD); }                           \
  void __tsan_write##n(void *p) { mem_access(p, n, K_STORE); }                         \
  void __tsan_unaligned_read##n(void *p) { mem_access(p, n, K_LOAD); }                 \
  void __tsan_unaligned_write##n(void *p) { mem_access(p, n, K_STORE); }               \
  void __tsan_volatile_read##n(void *p) { mem_access(p, n, K_LOAD); }                  \
  void __tsan_volatile_write##n(void *p) { mem_access(p, n, K_STORE); }                \
  void __tsan_unaligned_volatile_read##n(void *p) { mem_access(p, n, K_LOAD); }        \
  void __tsan_unaligned_volatile_write##n(void *p) { mem_access(p, n, K_STORE); }
HOOKS(1)
HOOKS(2)
HOOKS(4)
HOOKS(8)
HOOKS(16)
void __tsan_read_range(void *p, unsigned long n) { mem_access(p, n, K_LOAD); }
void __tsan_write_range(void *p, unsigned long n) { mem_access(p, n, K_STORE); }
void __tsan_init(void) {}
void __tsan_func_entry(void *pc) {
  (void)pc;
  if (self) self->gap += 2; /* call and return */
}
void __tsan_func_exit(void) {}
void __tsan_vptr_update(void **p, void *v) { (void)v; mem_access(p, sizeof *p, K_STORE); }
void __tsan_vptr_read(void **p) { mem_access(p, sizeof *p, K_LOAD); }

/* C11/C++11 atomics: done here (libtsan is not linked), recorded as rmw/load/store. */
#define ATOMICS(n, T)                                                                                         \
  T __tsan_atomic##n##_load(const volatile T *a, int mo) { (void)mo; mem_access((const void *)a, n / 8, K_LOAD); return __atomic_load_n(a, __ATOMIC_SEQ_CST); } \
  void __tsan_atomic##n##_store(volatile T *a, T v, int mo) { (void)mo; mem_access((const void *)a, n / 8, K_STORE); __atomic_store_n(a, v, __ATOMIC_SEQ_CST); } \
  T __tsan_atomic##n##_exchange(volatile T *a, T v, int mo) { (void)mo; rmw(a, n / 8, 1); return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST); } \
  T __tsan_atomic##n##_fetch_add(volatile T *a, T v, int mo) { (void)mo; rmw(a, n / 8, 0); return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); } \
  T __tsan_atomic##n##_fetch_sub(volatile T *a, T v, int mo) { (void)mo; rmw(a, n / 8, 0); return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST); } \
  T __tsan_atomic##n##_fetch_and(volatile T *a, T v, int mo) { (void)mo; rmw(a, n / 8, 3); return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST); } \
  T __tsan_atomic##n##_fetch_or(volatile T *a, T v, int mo) { (void)mo; rmw(a, n / 8, 3); return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); } \
  T __tsan_atomic##n##_fetch_xor(volatile T *a, T v, int mo) { (void)mo; rmw(a, n / 8, 3); return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST); } \
  T __tsan_atomic##n##_fetch_nand(volatile T *a, T v, int mo) { (void)mo; rmw(a, n / 8, 3); return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST); } \
  int __tsan_atomic##n##_compare_exchange_strong(volatile T *a, T *c, T v, int mo, int fmo) {                 \
    (void)mo; (void)fmo; rmw(a, n / 8, 2);                                                                    \
    return __atomic_compare_exchange_n(a, c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                       \
  }                                                                                                           \
  int __tsan_atomic##n##_compare_exchange_weak(volatile T *a, T *c, T v, int mo, int fmo) {                   \
    (void)mo; (void)fmo; rmw(a, n / 8, 2);                                                                    \
    return __atomic_compare_exchange_n(a, c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                       \
  }                                                                                                           \
  T __tsan_atomic##n##_compare_exchange_val(volatile T *a, T c, T v, int mo, int fmo) {                       \
    (void)mo; (void)fmo; rmw(a, n / 8, 2);                                                                    \
    __atomic_compare_exchange_n(a, &c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                             \
    return c;                                                                                                 \
  }
ATOMICS(8, uint8_t)
ATOMICS(16, uint16_t)
ATOMICS(32, uint32_t)
ATOMICS(64, uint64_t)
void __tsan_atomic_thread_fence(int mo) {
  (void)mo;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (self) rec(self, K_FENCE, 0, 0, 0, 0, 0, 0);
}
void __tsan_atomic_signal_fence(int mo) { (void)mo; }

/* Library copies, wrapped at link time. */
void *__real_memcpy(void *d, const void *s, size_t n);
void *__real_memset(void *d, int c, size_t n);
void *__real_memmove(void *d, const void *s, size_t n);
void *__wrap_memcpy(void *d, const void *s, size_t n) {
  mem_access(s, n, K_LOAD);
  mem_access(d, n, K_STORE);
  return __real_memcpy(d, s, n);
}
void *__wrap_memmove(void *d, const void *s, size_t n) {
  mem_access(s, n, K_LOAD);
  mem_access(d, n, K_STORE);
  return __real_memmove(d, s, n);
}
void *__wrap_memset(void *d, int c, size_t n) {
  mem_access(d, n, K_STORE);
  return __real_memset(d, c, n);
}

/* ---------------------------------------------------------------- PARMACS */

void mbpt_init(void) {
  if (arena_limit) return;
  const char *o = getenv("MBPTRACE_OUT");
  if (o && *o) snprintf(out_dir, sizeof out_dir, "%s", o);
  if (mkdir(out_dir, 0777) && errno != EEXIST) die("cannot create %s: %s", out_dir, strerror(errno));
  const char *mb = getenv("MBPTRACE_ARENA_MB");
  const uint64_t bytes = (uint64_t)(mb ? strtoull(mb, NULL, 10) : 1024) << 20;
  void *p = mmap((void *)ARENA_BASE, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p != (void *)ARENA_BASE) die("cannot map the shared arena at 0x%llx (%s)", (unsigned long long)ARENA_BASE, strerror(errno));
  arena_limit = bytes;
  next_id = 1;
  tids[0] = pthread_self();
  self = open_thread(0);
  rec(self, K_BEGIN, 0, 0, 0, 0, 0, 0);
}

void *mbpt_malloc(size_t bytes) {
  if (!arena_limit) mbpt_init();
  pthread_mutex_lock(&global);
  const size_t at = (arena_used + 63) & ~(size_t)63; /* cache-line aligned, as G_MALLOC users expect */
  if (at + bytes > arena_limit) die("the shared arena is full (%llu MiB; set MBPTRACE_ARENA_MB)", (unsigned long long)(arena_limit >> 20));
  arena_used = at + bytes;
  if (nallocs == allocs_cap) { /* no cap: a program may make any number (WATER-NSQUARED: 32,787) */
    allocs_cap = allocs_cap ? 2 * allocs_cap : 4096;
    struct alloc *grown = realloc(allocs, allocs_cap * sizeof *allocs);
    if (!grown) die("out of memory recording shared allocation %zu", nallocs + 1);
    allocs = grown;
  }
  allocs[nallocs].addr = ARENA_BASE + at;
  allocs[nallocs].size = bytes ? bytes : 1;
  ++nallocs;
  pthread_mutex_unlock(&global);
  if (self) rec(self, K_ALLOC, ARENA_BASE + at, bytes ? bytes : 1, 0, 0, 0, 0);
  return (void *)(ARENA_BASE + at);
}

struct start { void (*fn)(void); int id; };
static void *trampoline(void *arg) {
  struct start s = *(struct start *)arg;
  free(arg);
  self = open_thread(s.id);
  rec(self, K_BEGIN, 0, 0, 0, 0, 0, 0);
  s.fn();
  close_thread(self);
  self = NULL;
  return NULL;
}

void mbpt_create(void (*fn)(void)) {
  if (!arena_limit) mbpt_init();
  pthread_mutex_lock(&global);
  const int id = next_id++;
  pthread_mutex_unlock(&global);
  if (id >= MAX_THREADS) die("more than %d threads", MAX_THREADS);
  rec(self, K_CREATE, 0, 0, 0, (uint64_t)id, 0, 0);
  struct start *s = malloc(sizeof *s);
  s->fn = fn;
  s->id = id;
  if (pthread_create(&tids[id], NULL, trampoline, s)) die("pthread_create failed");
}

/* Joins up to n created threads not joined yet. (Splash-3 passes P, counting the main
 * thread, which its pthread macros "join" to no effect.) */
void mbpt_wait_for_end(long n) {
  for (long i = 0; i < n && joined_upto < next_id; ++i) {
    const int id = joined_upto++;
    pthread_join(tids[id], NULL);
    rec(self, K_JOIN, 0, 0, 0, (uint64_t)id, 0, 0);
  }
}

void mbpt_lock_init(mbpt_lock_t *l) {
  pthread_mutex_init(&l->m, NULL);
  l->order = 0;
}
void mbpt_lock(mbpt_lock_t *l) {
  pthread_mutex_lock(&l->m);
  rec(self, K_ACQUIRE, (uintptr_t)l, 0, 0, 0, 0, l->order++);
}
void mbpt_unlock(mbpt_lock_t *l) {
  rec(self, K_RELEASE, (uintptr_t)l, 0, 0, 0, 0, 0);
  pthread_mutex_unlock(&l->m);
}

void mbpt_barrier_init(mbpt_barrier_t *b) {
  pthread_mutex_init(&b->m, NULL);
  pthread_cond_init(&b->c, NULL);
  b->count = 0;
  b->episode = 0;
}
void mbpt_barrier(mbpt_barrier_t *b, long participants) {
  pthread_mutex_lock(&b->m);
  const uint64_t e = b->episode;
  rec(self, K_BARRIER, (uintptr_t)b, 0, 0, 0, (uint64_t)participants, e);
  if (++b->count == (unsigned long)participants) {
    b->count = 0;
    ++b->episode;
    pthread_cond_broadcast(&b->c);
  } else {
    while (b->episode == e) pthread_cond_wait(&b->c, &b->m);
  }
  pthread_mutex_unlock(&b->m);
}

void mbpt_pause_init(mbpt_pause_t *p) {
  pthread_mutex_init(&p->m, NULL);
  pthread_cond_init(&p->c, NULL);
  p->flag = 0;
  p->wakes = 0;
}
void mbpt_setpause(mbpt_pause_t *p) {
  pthread_mutex_lock(&p->m);
  p->flag = 1;
  rec(self, K_BROADCAST, (uintptr_t)p, 0, 0, 0, 0, p->wakes++);
  pthread_cond_broadcast(&p->c);
  pthread_mutex_unlock(&p->m);
}
void mbpt_clearpause(mbpt_pause_t *p) {
  pthread_mutex_lock(&p->m);
  p->flag = 0;
  pthread_mutex_unlock(&p->m);
}
void mbpt_waitpause(mbpt_pause_t *p) {
  pthread_mutex_lock(&p->m);
  while (!p->flag) pthread_cond_wait(&p->c, &p->m);
  rec(self, K_CWAIT, (uintptr_t)p, 0, 0, 0, 0, p->wakes - 1);
  pthread_mutex_unlock(&p->m);
}

void mbpt_roi(int begin) { rec(self, begin ? K_ROI_BEGIN : K_ROI_END, 0, 0, 0, 0, 0, 0); }

unsigned long mbpt_clock_us(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (unsigned long)tv.tv_sec * 1000000ul + (unsigned long)tv.tv_usec;
}

void mbpt_finish(void) {
  if (!self) return;
  close_thread(self);
  self = NULL;
  char path[4200];
  snprintf(path, sizeof path, "%s/trace.meta", out_dir);
  FILE *f = fopen(path, "w");
  if (!f) die("cannot create %s: %s", path, strerror(errno));
  char cmd[1024] = "";
  FILE *c = fopen("/proc/self/cmdline", "rb");
  size_t n = c ? fread(cmd, 1, sizeof cmd - 1, c) : 0;
  if (c) fclose(c);
  for (size_t i = 0; i < n; ++i)
    if (cmd[i] == '\0' || cmd[i] == '\n') cmd[i] = ' ';
  cmd[n] = '\0';
  char *args = strchr(cmd, ' ');
  if (args) *args++ = '\0';
  const char *prog = strrchr(cmd, '/') ? strrchr(cmd, '/') + 1 : cmd;
  fprintf(f, "mbpsim-trace 1\nprogram %s\n", *prog ? prog : "unknown");
  if (args) {
    size_t k = strlen(args);
    while (k && args[k - 1] == ' ') args[--k] = '\0';
    if (*args) fprintf(f, "args %s\n", args);
  }
  fprintf(f, "threads %d\nencoding binary-gzip\ngap_unit instructions\n", next_id);
  fprintf(f, "capture mbptrace (tsan hooks, shared arena at 0x%llx; gap = %d x private accesses + 2 per call)\n",
          (unsigned long long)ARENA_BASE, GAP_PER_PRIVATE);
  for (size_t i = 0; i < nallocs; ++i) fprintf(f, "alloc 0x%llx %llu\n", (unsigned long long)allocs[i].addr, (unsigned long long)allocs[i].size);
  if (fclose(f)) die("writing %s failed", path);
}
