/* MBCF_FIFOe (thesis 4.1, Figures 4.3-4.6): per-sender order under overflow and RETRY, with
 * the "return-to-sender" resend of cancelled entries, checked with SPIN.
 * The receiver's side follows the FIFOe case of models/mbcf/engine.cpp: an entry goes in if
 * there is room; a NORMAL that finds no room stops the FIFO for its sender (StoppedNow);
 * every NORMAL from a stopped sender is cancelled (Stopped); that sender's RETRY, finding
 * room, restarts it (Task::fifoe_stopped keeps the stopped senders).
 * Senders keep copies and follow 4.1: the entry whose status says StoppedNow is resent with
 * RETRY, every other cancelled one with NORMAL, in their original order, behind the RETRY.
 * Transport is the in-order, loss-free delivery Go-back-N gives (one channel per sender).
 * Checked: each sender's entries enter the FIFO exactly once and in its order; every entry
 * eventually enters (the senders end); no invalid end state.
 *   -DSENDERS=n      number of senders (1 or 2)
 *   -DPER_SENDER=0   one stopped flag for the whole FIFO, as the engine had until SPIN
 *                    found that with two senders one sender's RETRY lets the other's newer
 *                    entry overtake its cancelled one (default 1: per sender, the engine).
 */
#ifndef SENDERS
#define SENDERS 1
#endif
#ifndef M
#define M 4          /* entries per sender */
#endif
#ifndef CAP
#define CAP 1        /* FIFO capacity in entries */
#endif
#ifndef W
#define W 3          /* entries a sender may have outstanding */
#endif
#ifndef PER_SENDER
#define PER_SENDER 1
#endif

mtype = { NORMAL, RETRY, OK, STOPPED_NOW, STOPPED };

chan req[SENDERS] = [W] of { mtype, byte };   /* kind, entry number */
chan rep[SENDERS] = [W] of { mtype, byte };   /* status, entry number */

byte used = 0;                 /* entries in the FIFO */
bool stopped[SENDERS];         /* PER_SENDER: per sender; else only stopped[0] is used */
byte nextin[SENDERS];          /* the entry each sender's next accepted one must be */

#if PER_SENDER
#define STOP(s) stopped[s]
#else
#define STOP(s) stopped[0]
#endif

active proctype fifo() {
  byte s, k;
  mtype kind;
end:
  do
  :: atomic { used > 0 -> used-- }               /* the owner takes an entry (light-weight call) */
  :: atomic {
       if
       :: req[0]?kind, k -> s = 0
#if SENDERS > 1
       :: req[1]?kind, k -> s = 1
#endif
       fi;
       if
       :: kind == NORMAL && STOP(s) -> rep[s]!STOPPED, k
       :: else ->
            if
            :: used < CAP ->
                 used++;
                 assert(k == nextin[s]);             /* once, and in the sender's order */
                 nextin[s]++;
                 if :: kind == RETRY -> STOP(s) = false :: else -> skip fi;
                 rep[s]!OK, k
            :: else ->
                 if
                 :: STOP(s) -> rep[s]!STOPPED, k       /* a RETRY that still finds no room */
                 :: else -> STOP(s) = true; rep[s]!STOPPED_NOW, k
                 fi
            fi
       fi }
  od
}

proctype sender(byte s) {
  byte next = 0, out = 0, k, i;
  byte nretry = 255;              /* the entry to resend with RETRY, 255: none */
  byte pending[M];                /* 1: cancelled, waiting to be resent */
  mtype st;
  do
  :: atomic { next < M && out < W && nretry == 255 -> req[s]!NORMAL, next; next++; out++ }
  :: atomic { rep[s]?st, k ->
       out--;
       if
       :: st == OK -> skip
       :: st == STOPPED_NOW -> pending[k] = 1; nretry = k
       :: st == STOPPED -> pending[k] = 1;
            if :: nretry == 255 -> nretry = k :: else -> skip fi   /* resend the oldest first */
       fi }
  /* resend every cancelled entry in order once all answers are back: RETRY for the first */
  :: atomic { out == 0 && nretry != 255 ->
       i = 0;
       do
       :: i < M && pending[i] == 1 && out < W ->
            if
            :: i == nretry -> req[s]!RETRY, i
            :: else -> req[s]!NORMAL, i
            fi;
            pending[i] = 0; out++; i++
       :: i < M && pending[i] == 0 -> i++
       :: else -> break
       od;
       nretry = 255 }
  :: atomic { next == M && out == 0 && nretry == 255 -> break }
  od;
  assert(nextin[s] == M)
}

init {
  atomic {
    run sender(0);
#if SENDERS > 1
    run sender(1)
#endif
  }
}
