/* MBCF/Ether Go-back-N (thesis 6.1.4) between one sender and one receiver, checked with SPIN.
 * It follows models/mbcf/gbn.cpp row for row (README.md here maps each rule to its rows):
 *   sender   Peer::sent (END_P), unacked (count), th1 (dynamic N), ack_pending/ack_req_seq,
 *            resending/resend_end, must_wait (TH2), collect(), arm_timer() -> the timeout,
 *            start_resend()/resend_next() (handshaked), the lack-of-buffers hint halving TH1;
 *   receiver Peer::arrived, the GapAsked state, the InOrder / Duplicate / Gap rows.
 * Sequence numbers are MOD-bit counters as END_P/RECV_P are 8-bit ones; TH2 < MOD/2 as the
 * C++ keeps TH2 <= 127. Frames are lost at most MAXLOSS times (bounded loss); a timer fires
 * only when nothing else can happen (SPIN's timeout), so premature timeouts are not modelled.
 * Checked: every payload is delivered once and in order (assert at delivery), the sender ends
 * with its window drained and every payload delivered (assert at its end), no deadlock (SPIN's
 * invalid end states), and bounded progress: no more than MAXLOSS+2 timeouts in a row without
 * progress (so with bounded loss every loss is repaired: liveness as a safety property).
 * Mutants (same names as models/core/mutant.h), selected with spin -DMUTANT=n:
 *   1 gbn_window_is_seq_space: TH2 = MOD and only d == 0 is a duplicate;
 *   2 dup_dropped_silently: a duplicate is not re-acknowledged.
 */
#ifndef K
#define K 10         /* payloads sent: more than MOD, so the numbers wrap */
#endif
#ifndef MOD
#define MOD 8        /* sequence space */
#endif
#ifndef TH2
#define TH2 3        /* window: < MOD/2 */
#endif
#ifndef TH1MAX
#define TH1MAX 2     /* ack request every TH1 uncollected packets */
#endif
#ifndef MAXLOSS
#define MAXLOSS 2
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define HALF (MOD / 2)
#define SEQ(x) ((x) % MOD)
#define GE(a, b) (SEQ((a) + MOD - (b)) < HALF)   /* seq_ge: a is b or after it */

mtype = { DATA, CTRL };
#define F_ACKREQ 1
#define F_RESENDREQ 4
#define F_HANDSHAKE 8

/* data: END_P, payload id, flags.  control: RECV_P (receiver -> sender) or an ack poll. */
chan s2r = [4] of { mtype, byte, byte, byte };
chan r2s = [4] of { mtype, byte, byte, byte };

byte loss = 0;        /* frames lost so far */
byte delivered = 0;   /* payloads accepted by the receiver, in order */
byte stalls = 0;      /* timeouts in a row without progress */

inline put(ch, a, b, c, d) {
  if
  :: loss < MAXLOSS -> loss++      /* lost on the wire */
  :: true -> ch!a, b, c, d
  fi
}

active proctype sender() {
  byte sent = 0, nun = 0, nxt = 0, th1 = TH1MAX, ackseq = 0, rend = 0, r, f, e, w;
  bool ack_pending = false, resending = false, progress;
#if MUTANT == 1
  w = MOD;
#else
  w = TH2;
#endif
  do
  /* send_sequenced: a new payload, if the window (TH2) has room and no resend runs */
  :: atomic { nxt < K && nun < w && !resending ->
       sent = SEQ(sent + 1); nun++;
       f = 0;
       if
       :: nun >= th1 && (!ack_pending || SEQ(sent + MOD - ackseq) >= th1) ->
            f = F_ACKREQ; ack_pending = true; ackseq = sent
       :: else -> skip
       fi;
       put(s2r, DATA, sent, nxt, f);
       nxt++ }
  /* the lack-of-buffers hint: TH1 halves (dynamic N) */
  :: atomic { th1 > 1 -> th1 = th1 / 2 }
  /* collect(): RECV_P frees every packet up to it (only numbers we have sent count) */
  :: atomic { r2s?CTRL, r, f, _ ->
       progress = false;
       do
       :: nun > 0 && GE(r, SEQ(sent + MOD + 1 - nun)) && GE(sent, r) -> nun--; progress = true
       :: else -> break
       od;
       if
       :: progress ->
            stalls = 0;
            if :: ack_pending && GE(r, ackseq) -> ack_pending = false :: else -> skip fi;
            if :: th1 < TH1MAX -> th1 = th1 * 2 :: else -> skip fi
       :: else -> skip
       fi;
       if
       :: f & F_RESENDREQ -> if :: !resending -> rend = sent :: else -> skip fi; resending = true
       :: else -> skip
       fi;
       /* resend_next(): the oldest, handshaked, while it is within the resend */
       if
       :: resending && nun > 0 && GE(rend, SEQ(sent + MOD + 1 - nun)) ->
            put(s2r, DATA, SEQ(sent + MOD + 1 - nun), nxt - nun, F_HANDSHAKE | F_ACKREQ)
       :: resending && !(nun > 0 && GE(rend, SEQ(sent + MOD + 1 - nun))) -> resending = false
       :: else -> skip
       fi }
  /* arm_timer() fired: ask for an ack if nothing was asked, else resend the oldest */
  :: atomic { timeout && nun > 0 ->
       stalls++;
       assert(stalls <= MAXLOSS + 2);   /* bounded loss must not stop progress */
       if
       :: !ack_pending && !resending ->
            ack_pending = true; ackseq = sent; put(s2r, CTRL, 0, 0, F_ACKREQ)
       :: else ->
            if :: !resending -> rend = sent :: else -> skip fi;
            resending = true;
            put(s2r, DATA, SEQ(sent + MOD + 1 - nun), nxt - nun, F_HANDSHAKE | F_ACKREQ)
       fi }
  :: atomic { nxt == K && nun == 0 && empty(r2s) -> break }
  od;
  assert(delivered == K)
}

active proctype receiver() {
  byte arrived = 0, e, id, f, d;
  bool resend_requested = false;
end:
  do
  :: atomic { s2r?CTRL, _, _, f ->           /* an ack poll: say where we are */
       put(r2s, CTRL, arrived, 0, 0) }
  :: atomic { s2r?DATA, e, id, f ->
       d = SEQ(e + MOD - arrived);
       if
       :: d == 1 ->                            /* in order: accept */
            assert(id == delivered);          /* nothing lost, nothing duplicated, in order */
            delivered++;
            arrived = e; resend_requested = false;
            stalls = 0;
            if :: f & F_ACKREQ -> put(r2s, CTRL, arrived, 0, 0) :: else -> skip fi
#if MUTANT == 1
       :: d == 0 ->
#else
       :: d == 0 || d >= HALF ->               /* behind: a duplicate; the ack may be lost */
#endif
#if MUTANT == 2
            skip
#else
            put(r2s, CTRL, arrived, 0, 0)
#endif
       :: else ->                              /* ahead: a gap; ask once for a resend */
            if
            :: !resend_requested -> resend_requested = true; put(r2s, CTRL, arrived, F_RESENDREQ, 0)
            :: else -> skip
            fi
       fi }
  /* the resend-request timer: no progress since the request, so it may be asked again */
  :: atomic { timeout && resend_requested -> resend_requested = false }
  od
}
