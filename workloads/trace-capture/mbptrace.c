/* mbptrace runtime: records a PARMACS program's shared-memory references and synchronisation
 * in the binary-gzip trace format of traces/FORMAT.md. Programs are built with mbptrace-cc
 * (its header says how it instruments them).
 *
 * - Shared allocations (G_MALLOC) come from one arena mapped at a fixed address, so shared
 *   addresses repeat from run to run and from build to build.
 * - References: mbptrace-cc's assembly pass calls __mbpt_ref before every instruction that
 *   reads or writes memory through a register; this file records those inside the arena.
 * - Compute gaps: the same pass makes every basic block add its instruction count to the
 *   thread-local mbpt_icount, so a record's gap is the number of the program's own
 *   instructions the thread executed since its previous record (a reference's own
 *   instruction excluded: the record stands for it). Library code (libc, libm) is not counted.
 * - memcpy/memset/memmove are wrapped at link time (-Wl,--wrap=...).
 * - Each thread fills its own buffer and writes its own stream; nothing is shared on the
 *   recording path but the arena bounds, which are fixed after start-up.
 * Build this file without mbptrace-cc's pass (plain gcc). */
#define _GNU_SOURCE
#include "mbptrace.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define ARENA_BASE 0x100000000000ull /* 16 TiB: clear of the heap, stacks and libraries */
#define ARENA_BASE_ASM "0x100000000000" /* the same, for the trampolines */
#define MAX_THREADS 1024
#define MAX_ACCESS 65536u /* the format's largest memory record */

enum { K_LOAD = 1, K_STORE, K_RMW, K_CREATE, K_JOIN, K_BEGIN, K_END, K_BARRIER, K_ACQUIRE, K_RELEASE,
       K_POST, K_WAIT, K_CWAIT, K_SIGNAL, K_BROADCAST, K_FENCE, K_ROI_BEGIN, K_ROI_END, K_ALLOC, K_DEP };

/* The program's instructions executed by this thread: mbptrace-cc's pass adds each basic
 * block's count (`addq $n, %fs:mbpt_icount@tpoff`). */
__thread uint64_t mbpt_icount __attribute__((tls_model("initial-exec")));

typedef struct {
  int id;
  gzFile out;
  uint64_t records, prev;
  uint64_t pos;   /* records other than deps: the numbers a dep names (FORMAT.md) */
  uint64_t seen;  /* mbpt_icount at the previous record */
  uint64_t debt;  /* references whose own instruction is still to leave the gaps */
  /* Hand-offs (see "Data handed through locks" below): while the thread holds a lock its
   * records stay in the buffer, so that a dep can go in front of the outermost acquire. */
  int held;             /* locks held */
  size_t cs_at;         /* the outermost acquire's offset in buf */
  uint64_t cs_stamp;    /* its acquisition stamp */
  uint64_t *dep_upto;   /* per thread: 1 + the highest record this one already waits for */
  size_t n, cap;
  unsigned char *buf;
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
/* Room for a record: the buffer is written out, or while a lock is held, grown. */
static void room(thread_t *t) {
  if (t->n <= t->cap - 64) return;
  if (!t->held) {
    flush(t);
    return;
  }
  t->cap *= 2;
  t->buf = realloc(t->buf, t->cap);
  if (!t->buf) die("out of memory holding the records of a critical section of thread %d", t->id);
}
static inline void byte(thread_t *t, unsigned char b) { t->buf[t->n++] = b; }
static size_t encode_varint(unsigned char *d, uint64_t v) { /* LEB128 into d; its length */
  size_t len = 0;
  for (; v >= 0x80; v >>= 7) d[len++] = (unsigned char)(v | 0x80);
  d[len++] = (unsigned char)v;
  return len;
}
static inline void varint(thread_t *t, uint64_t v) { t->n += encode_varint(t->buf + t->n, v); }
static inline void address(thread_t *t, uint64_t a) {
  const int64_t d = (int64_t)(a - t->prev);
  varint(t, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
  t->prev = a;
}
/* One record: kind, gap, then the kind's fields (FORMAT.md order). */
static void shadow_store(thread_t *t, uint64_t addr, uint64_t size);
static void shadow_load(thread_t *t, uint64_t addr, uint64_t size);
static void rec(thread_t *t, int kind, uint64_t addr, uint64_t size, int op, uint64_t thread, uint64_t count, uint64_t seq) {
  /* A load first: an atomic's read sees the previous writer, not its own write. */
  if ((kind == K_LOAD || kind == K_RMW) && t->held) shadow_load(t, addr, size);
  if (kind == K_STORE || kind == K_RMW) shadow_store(t, addr, size);
  room(t);
  byte(t, (unsigned char)kind);
  /* Instructions since the previous record, less the references' own (a block's count may be
   * added after its first reference runs: the debt waits for it). */
  const uint64_t now = mbpt_icount;
  uint64_t gap = now - t->seen;
  t->seen = now;
  const uint64_t paid = gap < t->debt ? gap : t->debt;
  t->debt -= paid;
  varint(t, gap - paid);
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
  ++t->pos;
}

static thread_t *open_thread(int id) {
  thread_t *t = calloc(1, sizeof *t);
  if (!t) die("out of memory");
  t->id = id;
  t->cap = 1 << 16;
  t->buf = malloc(t->cap);
  t->dep_upto = calloc(MAX_THREADS, sizeof *t->dep_upto);
  if (!t->buf || !t->dep_upto) die("out of memory");
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

static uint64_t total_instructions = 0; /* every ended thread's mbpt_icount, for trace.meta */

static void close_thread(thread_t *t) {
  rec(t, K_END, 0, 0, 0, 0, 0, 0);
  pthread_mutex_lock(&global);
  total_instructions += mbpt_icount;
  pthread_mutex_unlock(&global);
  byte(t, 0);
  varint(t, t->records);
  flush(t);
  if (gzclose(t->out) != Z_OK) die("closing the stream of thread %d failed", t->id);
  free(t->buf);
  free(t->dep_upto);
  free(t);
}

/* ---------------------------------------------------------------- memory references */

static inline int in_arena(uintptr_t a) { return a - ARENA_BASE < arena_limit; }

/* ---------------------------------------------------------------- data handed through locks
 *
 * Replay grants locks first come in simulated time (trace.sync = simulated), not in the
 * captured order. A program that hands data through a lock-protected structure (a task queue,
 * a cell of a tree, a running sum) then needs what SynchroTrace calls a communication edge:
 * the reader may take the lock only after the writer's write. The capture keeps, for every
 * 8-byte word of the arena, the last thread that stored to it, that store's record number and
 * the acquisition stamp current at the time (a global count of acquisitions, in logical-time
 * order). A load inside a critical section of a word another thread stored to before this
 * critical section began (stamp below the outermost acquire's) puts `dep WRITER RECORD` in
 * front of the outermost acquire, once per writer and record (a later record of the same
 * writer covers earlier ones). Placed there, the waiting thread holds no lock while it waits.
 * A store into the critical section's span by a thread that was not ordered before it (a data
 * race) gives no dep. */
struct shadow { uint64_t who, stamp; }; /* who: (thread + 1) << 44 | record number; 0: never stored */
static struct shadow *shadow = NULL;    /* one per 8-byte word of the arena (MAP_NORESERVE) */
static uint64_t acquisitions = 0;       /* the acquisition stamp */
#define WHO_SHIFT 44

static void shadow_store(thread_t *t, uint64_t addr, uint64_t size) {
  const uint64_t who = ((uint64_t)(t->id + 1) << WHO_SHIFT) | t->pos;
  const uint64_t stamp = __atomic_load_n(&acquisitions, __ATOMIC_RELAXED);
  for (uint64_t w = (addr - ARENA_BASE) >> 3, end = (addr - ARENA_BASE + size + 7) >> 3; w < end; ++w) {
    __atomic_store_n(&shadow[w].stamp, stamp, __ATOMIC_RELAXED);
    __atomic_store_n(&shadow[w].who, who, __ATOMIC_RELAXED);
  }
}

/* `dep writer record` in front of the outermost acquire (FORMAT.md field order: thread, order). */
static void insert_dep(thread_t *t, int writer, uint64_t record) {
  unsigned char d[24];
  size_t len = 0;
  d[len++] = K_DEP;
  d[len++] = 0; /* gap: none (the acquire after it keeps its own) */
  len += encode_varint(d + len, (uint64_t)writer);
  len += encode_varint(d + len, record);
  while (t->n + len > t->cap) room(t);
  memmove(t->buf + t->cs_at + len, t->buf + t->cs_at, t->n - t->cs_at);
  memcpy(t->buf + t->cs_at, d, len);
  t->n += len;
  ++t->records;
}

static void shadow_load(thread_t *t, uint64_t addr, uint64_t size) {
  for (uint64_t w = (addr - ARENA_BASE) >> 3, end = (addr - ARENA_BASE + size + 7) >> 3; w < end; ++w) {
    const uint64_t who = __atomic_load_n(&shadow[w].who, __ATOMIC_RELAXED);
    if (!who) continue;
    const int writer = (int)(who >> WHO_SHIFT) - 1;
    const uint64_t record = who & (((uint64_t)1 << WHO_SHIFT) - 1);
    if (writer == t->id || record < t->dep_upto[writer]) continue;
    if (__atomic_load_n(&shadow[w].stamp, __ATOMIC_RELAXED) >= t->cs_stamp) continue; /* not ordered before */
    insert_dep(t, writer, record);
    t->dep_upto[writer] = record + 1;
  }
}

static inline void mem_access(const void *p, uint64_t size, int kind) {
  thread_t *t = self;
  if (!t) return;
  const uintptr_t a = (uintptr_t)p;
  if (!in_arena(a)) {
    return;
  }
  while (size > MAX_ACCESS) {
    rec(t, kind, (uintptr_t)p, MAX_ACCESS, 0, 0, 0, 0);
    size -= MAX_ACCESS;
    p = (const char *)p + MAX_ACCESS;
  }
  if (size) rec(t, kind, (uintptr_t)p, size, 0, 0, 0, 0);
}
static inline void rmw(const volatile void *p, uint64_t size, int op) {
  thread_t *t = self;
  if (!t) return;
  if (!in_arena((uintptr_t)p)) {
    return;
  }
  rec(t, K_RMW, (uintptr_t)p, size, op, 0, 0, 0);
}

/* The hooks mbptrace-cc's assembly pass calls before every instruction that reads or writes
 * memory through a register (stack and %rip-relative operands are private by definition and
 * not hooked). They must preserve every register and the flags of the program, so each is
 * entered through a trampoline that saves them, aligns the stack and calls the C function
 * with the program's %rdi, %rsi, %rdx, %rcx as its arguments:
 *   __mbpt_ref(addr, code)               code: kind (bits 0-3: 1 load, 2 store, 3 load then
 *                                         store, 4 atomic rmw, 5 fence), atomic op (bits
 *                                         4-5), size in bytes (bits 8-); one instruction
 *   __mbpt_rep(dst, src, count, code)    a string instruction (stos, movs, lods), rep'ed
 *                                         `count` times (1 without rep); code: kind (1 stos,
 *                                         2 movs, 3 lods), element size (bits 8-)
 * Private addresses leave the trampoline after a bounds check, without saving anything. */
uintptr_t mbpt_arena_end = 0; /* ARENA_BASE + bytes mapped, read by the trampolines */

void mbpt_ref(uint64_t addr, uint64_t code) {
  thread_t *t = self;
  if (!t) return;
  const uint64_t size = code >> 8;
  if ((code & 15) == 5) { /* mfence: a record that stands for no memory instruction */
    rec(t, K_FENCE, 0, 0, 0, 0, 0, 0);
    return;
  }
  ++t->debt; /* the records below stand for this one instruction */
  switch (code & 15) {
    case 1: mem_access((const void *)addr, size, K_LOAD); break;
    case 2: mem_access((const void *)addr, size, K_STORE); break;
    case 3: mem_access((const void *)addr, size, K_LOAD); mem_access((const void *)addr, size, K_STORE); break;
    case 4: rmw((const volatile void *)addr, size, (int)((code >> 4) & 3)); break;
    default: die("mbptrace-cc emitted an unknown hook code %llu", (unsigned long long)code);
  }
}

void mbpt_rep(uint64_t dst, uint64_t src, uint64_t count, uint64_t code) {
  thread_t *t = self;
  if (!t || !count) return;
  const uint64_t bytes = count * (code >> 8);
  ++t->debt;
  switch (code & 15) {
    case 1: mem_access((const void *)dst, bytes, K_STORE); break;
    case 2: mem_access((const void *)src, bytes, K_LOAD); mem_access((const void *)dst, bytes, K_STORE); break;
    case 3: mem_access((const void *)src, bytes, K_LOAD); break;
    default: die("mbptrace-cc emitted an unknown string-instruction code %llu", (unsigned long long)code);
  }
}

/* The trampolines. __mbpt_ref returns at once for an address outside [ARENA_BASE,
 * mbpt_arena_end) (a private access: its instruction is counted, nothing recorded); otherwise,
 * and always for __mbpt_rep, it saves the flags, the caller-saved integer registers and
 * %xmm0-15, aligns the stack to 16 bytes and calls the C hook with the program's %rdi, %rsi,
 * %rdx, %rcx. The program is built with -mno-red-zone, so the pushes below %rsp overwrite
 * nothing of its. */
#define SAVE_CALL_RESTORE(target)                                                            \
  "pushq %rcx\n pushq %rdx\n pushq %rsi\n pushq %rdi\n pushq %r8\n pushq %r9\n"              \
  "pushq %r10\n pushq %r11\n pushq %rbp\n movq %rsp, %rbp\n"                                 \
  "andq $-16, %rsp\n subq $256, %rsp\n"                                                      \
  "movdqu %xmm0, 0(%rsp)\n movdqu %xmm1, 16(%rsp)\n movdqu %xmm2, 32(%rsp)\n"                \
  "movdqu %xmm3, 48(%rsp)\n movdqu %xmm4, 64(%rsp)\n movdqu %xmm5, 80(%rsp)\n"               \
  "movdqu %xmm6, 96(%rsp)\n movdqu %xmm7, 112(%rsp)\n movdqu %xmm8, 128(%rsp)\n"             \
  "movdqu %xmm9, 144(%rsp)\n movdqu %xmm10, 160(%rsp)\n movdqu %xmm11, 176(%rsp)\n"          \
  "movdqu %xmm12, 192(%rsp)\n movdqu %xmm13, 208(%rsp)\n movdqu %xmm14, 224(%rsp)\n"         \
  "movdqu %xmm15, 240(%rsp)\n"                                                               \
  "call " target "\n"                                                                        \
  "movdqu 0(%rsp), %xmm0\n movdqu 16(%rsp), %xmm1\n movdqu 32(%rsp), %xmm2\n"                \
  "movdqu 48(%rsp), %xmm3\n movdqu 64(%rsp), %xmm4\n movdqu 80(%rsp), %xmm5\n"               \
  "movdqu 96(%rsp), %xmm6\n movdqu 112(%rsp), %xmm7\n movdqu 128(%rsp), %xmm8\n"             \
  "movdqu 144(%rsp), %xmm9\n movdqu 160(%rsp), %xmm10\n movdqu 176(%rsp), %xmm11\n"          \
  "movdqu 192(%rsp), %xmm12\n movdqu 208(%rsp), %xmm13\n movdqu 224(%rsp), %xmm14\n"         \
  "movdqu 240(%rsp), %xmm15\n"                                                               \
  "movq %rbp, %rsp\n popq %rbp\n popq %r11\n popq %r10\n popq %r9\n popq %r8\n"              \
  "popq %rdi\n popq %rsi\n popq %rdx\n popq %rcx\n"
__asm__(".text\n.globl __mbpt_ref\n.type __mbpt_ref,@function\n__mbpt_ref:\n"
        "pushfq\n pushq %rax\n"
        "movabsq $" ARENA_BASE_ASM ", %rax\n cmpq %rax, %rdi\n jb 1f\n"
        "cmpq mbpt_arena_end(%rip), %rdi\n jae 1f\n"
        SAVE_CALL_RESTORE("mbpt_ref")
        "1:\n popq %rax\n popfq\n ret\n"
        ".size __mbpt_ref, .-__mbpt_ref\n");
__asm__(".text\n.globl __mbpt_rep\n.type __mbpt_rep,@function\n__mbpt_rep:\n"
        "pushfq\n pushq %rax\n"
        SAVE_CALL_RESTORE("mbpt_rep")
        "popq %rax\n popfq\n ret\n"
        ".size __mbpt_rep, .-__mbpt_rep\n");

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

/* ---------------------------------------------------------------- the order of synchronisation
 *
 * On a host with fewer cores than threads, the order in which threads take a lock is the host
 * scheduler's, and a trace that records it makes a replay replay the host (issue 37: RAYTRACE's
 * work queue, VOLREND, BARNES). By default (MBPTRACE_ORDER=instructions) the capture orders
 * synchronisation by logical time instead, as Kendo does (Olszewski, Ansel, Amarasinghe,
 * ASPLOS 2009): a thread's logical time is the instructions it has executed (mbpt_icount)
 * plus what it gained waiting, and
 *   - a thread takes a lock only when its logical time is the least of all running threads'
 *     (ties: the lower thread number), and only if the last release happened at an earlier
 *     logical time; otherwise it adds to its logical time (16, 32, ... instructions) and tries
 *     again at its next turn;
 *   - a thread that blocks (barrier, condition or pause wait, join) does not hold the others
 *     back; the thread that wakes it makes it run again at the waker's logical time, or later
 *     (a barrier: the latest arrival's);
 *   - a created thread starts at its creator's logical time.
 * So the order of acquisitions, and the whole trace, is the same on every host and every run:
 * the order of a machine whose processors run the program's instructions at one rate.
 * MBPTRACE_ORDER=host records the host's order, as before 2026-11-29. */
enum { ABSENT = 0, RUNNING, BLOCKED, FINISHED };
static int deterministic = 1;
static struct {
  const uint64_t *icount; /* the thread's mbpt_icount */
  uint64_t bias;          /* logical time gained waiting or on a wake-up */
  int state;
  int joiner;             /* the thread blocked joining this one, -1 none */
  uint64_t final;         /* its logical time when it ended */
} clk[MAX_THREADS];
static const uint64_t no_instructions = 0;
/* Defined (weak) by every object mbptrace-cc's pass produced; absent when the program was
 * built with gcc alone (the uninstrumented builds valgrind counts), whose logical time would
 * never advance: those keep the host's order. */
extern const char mbpt_instrumented __attribute__((weak));
/* A thread being made to run (woken or created) changes two words of another thread; a turn
 * check that overlaps such a change looks again. */
static uint64_t busy = 0, gen = 0;

static inline uint64_t clock_of(int i) {
  return __atomic_load_n(clk[i].icount, __ATOMIC_ACQUIRE) + __atomic_load_n(&clk[i].bias, __ATOMIC_ACQUIRE);
}
static inline uint64_t my_clock(void) { return clock_of(self->id); }
static inline void advance_to(uint64_t at) { /* the calling thread's logical time, at least `at` */
  const uint64_t c = my_clock();
  if (at > c) __atomic_store_n(&clk[self->id].bias, clk[self->id].bias + (at - c), __ATOMIC_RELEASE);
}
/* Thread i (blocked, or new) runs from logical time max(its own, at). */
static void make_running(int i, uint64_t at) {
  __atomic_add_fetch(&busy, 1, __ATOMIC_SEQ_CST);
  const uint64_t c = clock_of(i);
  if (at > c) __atomic_store_n(&clk[i].bias, clk[i].bias + (at - c), __ATOMIC_SEQ_CST);
  __atomic_store_n(&clk[i].state, RUNNING, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&gen, 1, __ATOMIC_SEQ_CST);
  __atomic_sub_fetch(&busy, 1, __ATOMIC_SEQ_CST);
}
static inline void block_self(void) {
  if (deterministic) __atomic_store_n(&clk[self->id].state, BLOCKED, __ATOMIC_SEQ_CST);
}
/* Waits until the calling thread's logical time is the least of the running threads'. */
static void wait_turn(void) {
  const int me = self->id;
  for (unsigned tries = 0;; ++tries) {
    const uint64_t g = __atomic_load_n(&gen, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&busy, __ATOMIC_SEQ_CST)) {
      const uint64_t c = my_clock();
      const int n = __atomic_load_n(&next_id, __ATOMIC_SEQ_CST);
      int mine = 1;
      for (int j = 0; j < n && mine; ++j) {
        if (j == me || __atomic_load_n(&clk[j].state, __ATOMIC_SEQ_CST) != RUNNING) continue;
        const uint64_t cj = clock_of(j);
        if (cj < c || (cj == c && j < me)) mine = 0;
      }
      if (mine && !__atomic_load_n(&busy, __ATOMIC_SEQ_CST) && __atomic_load_n(&gen, __ATOMIC_SEQ_CST) == g) return;
    }
    /* The threads behind this one need the host's cores: give them way, and after a while
     * sleep rather than spin (16 threads on 2 cores spend most of their time here). */
    if (tries < 32) {
      sched_yield();
    } else {
      const struct timespec nap = {0, tries < 256 ? 20000 : 200000};
      nanosleep(&nap, NULL);
    }
  }
}

/* A thread blocked on a barrier, pause or condition, on its caller's stack. */
struct mbpt_waiter {
  pthread_cond_t c;
  int woken, id;
  uint64_t by;
  struct mbpt_waiter *next;
};

/* The calling thread has ended: its joiner, if blocked, runs from its final logical time. */
static void end_thread(void) {
  const int me = self->id;
  const uint64_t final = my_clock();
  close_thread(self);
  self = NULL;
  pthread_mutex_lock(&global);
  clk[me].final = final;
  if (deterministic && clk[me].joiner >= 0) make_running(clk[me].joiner, final);
  __atomic_store_n(&clk[me].state, FINISHED, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&global);
}

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
  mbpt_arena_end = (uintptr_t)ARENA_BASE + bytes;
  shadow = mmap(NULL, (bytes >> 3) * sizeof *shadow, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (shadow == MAP_FAILED) die("cannot map the arena's shadow (%s)", strerror(errno));
  const char *order = getenv("MBPTRACE_ORDER");
  if (order && *order && strcmp(order, "instructions") && strcmp(order, "host"))
    die("MBPTRACE_ORDER must be instructions or host, not '%s'", order);
  deterministic = !(order && !strcmp(order, "host")) && &mbpt_instrumented != NULL;
  clk[0].icount = &mbpt_icount;
  clk[0].joiner = -1;
  clk[0].state = RUNNING;
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
  __atomic_store_n(&clk[s.id].icount, &mbpt_icount, __ATOMIC_SEQ_CST); /* 0, as no_instructions */
  self = open_thread(s.id);
  rec(self, K_BEGIN, 0, 0, 0, 0, 0, 0);
  s.fn();
  end_thread();
  return NULL;
}

void mbpt_create(void (*fn)(void)) {
  if (!arena_limit) mbpt_init();
  pthread_mutex_lock(&global);
  const int id = next_id;
  if (id >= MAX_THREADS) die("more than %d threads", MAX_THREADS);
  /* Visible, at its creator's logical time, before anything can look for it. */
  __atomic_add_fetch(&busy, 1, __ATOMIC_SEQ_CST);
  clk[id].icount = &no_instructions;
  clk[id].bias = my_clock();
  clk[id].joiner = -1;
  __atomic_store_n(&clk[id].state, RUNNING, __ATOMIC_SEQ_CST);
  __atomic_store_n(&next_id, id + 1, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&gen, 1, __ATOMIC_SEQ_CST);
  __atomic_sub_fetch(&busy, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&global);
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
    if (deterministic) {
      pthread_mutex_lock(&global);
      if (clk[id].state == FINISHED) {
        advance_to(clk[id].final);
      } else {
        clk[id].joiner = self->id; /* it makes this thread run when it ends */
        block_self();
      }
      pthread_mutex_unlock(&global);
    }
    pthread_join(tids[id], NULL);
    rec(self, K_JOIN, 0, 0, 0, (uint64_t)id, 0, 0);
  }
}

/* The sequence counter of the object at `obj`: one per address for the whole run, so an
 * object initialised again continues its numbering. An open-addressing table that doubles;
 * the counters themselves never move. */
static struct seq_slot { uintptr_t addr; uint64_t *count; } *seqs = NULL;
static size_t nseqs = 0, seqs_cap = 0;
static uint64_t *sequence(const void *obj) {
  const uintptr_t a = (uintptr_t)obj;
  pthread_mutex_lock(&global);
  if (2 * (nseqs + 1) > seqs_cap) {
    const size_t cap = seqs_cap ? 2 * seqs_cap : 1024;
    struct seq_slot *t = calloc(cap, sizeof *t);
    if (!t) die("out of memory for synchronisation object %zu", nseqs + 1);
    for (size_t i = 0; i < seqs_cap; ++i)
      if (seqs[i].count) {
        size_t j = (seqs[i].addr >> 3) * 0x9E3779B97F4A7C15ull & (cap - 1);
        while (t[j].count) j = (j + 1) & (cap - 1);
        t[j] = seqs[i];
      }
    free(seqs);
    seqs = t;
    seqs_cap = cap;
  }
  size_t j = (a >> 3) * 0x9E3779B97F4A7C15ull & (seqs_cap - 1);
  while (seqs[j].count && seqs[j].addr != a) j = (j + 1) & (seqs_cap - 1);
  if (!seqs[j].count) {
    seqs[j].addr = a;
    seqs[j].count = calloc(1, sizeof *seqs[j].count);
    if (!seqs[j].count) die("out of memory for synchronisation object %zu", nseqs + 1);
    ++nseqs;
  }
  uint64_t *c = seqs[j].count;
  pthread_mutex_unlock(&global);
  return c;
}

void mbpt_lock_init(mbpt_lock_t *l) {
  pthread_mutex_init(&l->m, NULL);
  l->order = sequence(l);
  l->released_at = 0;
  l->released_by = -1;
}
void mbpt_lock(mbpt_lock_t *l) {
  if (!deterministic) {
    pthread_mutex_lock(&l->m);
  } else {
    for (uint64_t step = 16;; step = step < (1u << 20) ? 2 * step : step) {
      wait_turn();
      if (pthread_mutex_trylock(&l->m) == 0) {
        const uint64_t c = my_clock();
        if (l->released_by < 0 || l->released_at < c || (l->released_at == c && l->released_by < self->id)) break;
        pthread_mutex_unlock(&l->m); /* released, but at a later logical time than this */
      }
      __atomic_store_n(&clk[self->id].bias, clk[self->id].bias + step, __ATOMIC_RELEASE);
    }
  }
  thread_t *t = self;
  if (!t->held) { /* the outermost: deps found inside go in front of its record */
    room(t);
    t->cs_at = t->n;
    t->cs_stamp = __atomic_add_fetch(&acquisitions, 1, __ATOMIC_RELAXED);
  }
  ++t->held;
  rec(t, K_ACQUIRE, (uintptr_t)l, 0, 0, 0, 0, (*l->order)++);
}
void mbpt_unlock(mbpt_lock_t *l) {
  l->released_at = my_clock();
  l->released_by = self->id;
  rec(self, K_RELEASE, (uintptr_t)l, 0, 0, 0, 0, 0);
  --self->held;
  pthread_mutex_unlock(&l->m);
}

void mbpt_barrier_init(mbpt_barrier_t *b) {
  pthread_mutex_init(&b->m, NULL);
  pthread_cond_init(&b->c, NULL);
  b->count = 0;
  b->episode = sequence(b);
  b->latest = 0;
  b->waiters = NULL;
}
void mbpt_barrier(mbpt_barrier_t *b, long participants) {
  pthread_mutex_lock(&b->m);
  const uint64_t e = *b->episode;
  rec(self, K_BARRIER, (uintptr_t)b, 0, 0, 0, (uint64_t)participants, e);
  const uint64_t c = my_clock();
  if (b->count == 0 || c > b->latest) b->latest = c;
  if (++b->count == (unsigned long)participants) {
    b->count = 0;
    ++*b->episode;
    if (deterministic) { /* everybody leaves at the latest arrival's logical time */
      for (struct mbpt_waiter *w = b->waiters; w; w = w->next) make_running(w->id, b->latest);
      advance_to(b->latest);
    }
    b->waiters = NULL;
    pthread_cond_broadcast(&b->c);
  } else {
    struct mbpt_waiter w = {.id = self->id, .next = b->waiters};
    b->waiters = &w;
    block_self();
    while (*b->episode == e) pthread_cond_wait(&b->c, &b->m);
  }
  pthread_mutex_unlock(&b->m);
}

void mbpt_pause_init(mbpt_pause_t *p) {
  pthread_mutex_init(&p->m, NULL);
  pthread_cond_init(&p->c, NULL);
  p->flag = 0;
  p->wakes = sequence(p);
  p->set_at = 0;
  p->waiters = NULL;
}
void mbpt_setpause(mbpt_pause_t *p) {
  pthread_mutex_lock(&p->m);
  p->flag = 1;
  p->set_at = my_clock();
  rec(self, K_BROADCAST, (uintptr_t)p, 0, 0, 0, 0, (*p->wakes)++);
  if (deterministic)
    for (struct mbpt_waiter *w = p->waiters; w; w = w->next) make_running(w->id, p->set_at);
  p->waiters = NULL;
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
  if (p->flag) {
    /* Set already: this thread goes on from the setter's logical time if that is later, as
     * it would have had it waited for the SETPAUSE. */
    if (deterministic) advance_to(p->set_at);
  } else {
    struct mbpt_waiter w = {.id = self->id, .next = p->waiters};
    p->waiters = &w;
    block_self();
    while (!p->flag) pthread_cond_wait(&p->c, &p->m);
  }
  rec(self, K_CWAIT, (uintptr_t)p, 0, 0, 0, 0, *p->wakes - 1);
  pthread_mutex_unlock(&p->m);
}

/* Condition variables. A waiter queues itself (oldest first) before it lets the program's
 * lock go, so no wake-up is lost; a signal takes the oldest waiter, a broadcast all of them,
 * and each woken waiter records the number of the wake-up that woke it (cwait), between the
 * lock's release and its re-acquisition, as traces/FORMAT.md says. A signal with no waiter
 * is recorded too (it happened; nobody consumes it). No spurious wake-ups: a program's
 * predicate loop simply waits again, with a cwait of its own. */
void mbpt_cond_init(mbpt_cond_t *c) {
  pthread_mutex_init(&c->m, NULL);
  c->wakes = sequence(c);
  c->head = c->tail = NULL;
}

void mbpt_cond_wait(mbpt_cond_t *c, mbpt_lock_t *l) {
  struct mbpt_waiter w;
  pthread_cond_init(&w.c, NULL);
  w.woken = 0;
  w.id = self->id;
  w.by = 0;
  w.next = NULL;
  pthread_mutex_lock(&c->m);
  if (c->tail) c->tail->next = &w;
  else c->head = &w;
  c->tail = &w;
  mbpt_unlock(l);
  block_self();
  while (!w.woken) pthread_cond_wait(&w.c, &c->m);
  pthread_mutex_unlock(&c->m);
  pthread_cond_destroy(&w.c);
  rec(self, K_CWAIT, (uintptr_t)c, 0, 0, 0, 0, w.by);
  mbpt_lock(l);
}

static void wake(mbpt_cond_t *c, int all) {
  pthread_mutex_lock(&c->m);
  const uint64_t n = (*c->wakes)++;
  rec(self, all ? K_BROADCAST : K_SIGNAL, (uintptr_t)c, 0, 0, 0, 0, n);
  while (c->head) {
    struct mbpt_waiter *w = c->head;
    c->head = w->next;
    if (!c->head) c->tail = NULL;
    w->woken = 1;
    w->by = n;
    if (deterministic) make_running(w->id, my_clock());
    pthread_cond_signal(&w->c);
    if (!all) break;
  }
  pthread_mutex_unlock(&c->m);
}
void mbpt_cond_signal(mbpt_cond_t *c) { wake(c, 0); }
void mbpt_cond_broadcast(mbpt_cond_t *c) { wake(c, 1); }

void mbpt_roi(int begin) { rec(self, begin ? K_ROI_BEGIN : K_ROI_END, 0, 0, 0, 0, 0, 0); }

unsigned long mbpt_clock_us(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (unsigned long)tv.tv_sec * 1000000ul + (unsigned long)tv.tv_usec;
}

void mbpt_finish(void) {
  if (!self) return;
  end_thread();
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
  if (&mbpt_instrumented == NULL)
    fprintf(f, "capture mbptrace runtime in a program not built by mbptrace-cc: memory instructions not recorded (only memcpy, memset, memmove), no instructions counted; synchronisation in the host's order\n");
  else
    fprintf(f, "capture mbptrace-cc (assembly pass: every memory instruction hooked, shared arena at 0x%llx; gap = the program's instructions, counted per basic block; %s)\n",
            (unsigned long long)ARENA_BASE,
            deterministic ? "synchronisation in logical-time order (MBPTRACE_ORDER=instructions)" : "synchronisation in the host's order (MBPTRACE_ORDER=host)");
  if (total_instructions) fprintf(f, "instructions %llu\n", (unsigned long long)total_instructions);
  for (size_t i = 0; i < nallocs; ++i) fprintf(f, "alloc 0x%llx %llu\n", (unsigned long long)allocs[i].addr, (unsigned long long)allocs[i].size);
  if (fclose(f)) die("writing %s failed", path);
}
