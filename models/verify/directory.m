-- The MBP directory protocol of one block (thesis 2.5-2.6), checked with Rumur.
-- It follows models/mbp/protocol.{h,cpp} (the controller tables) and models/mbp/mbp.cpp (the
-- home's actions) state for state; README.md here maps each part. Modelled:
--  * one home and NR remote nodes; the sharer set is a hierarchical bitmap whose leaf bit
--    covers GROUP nodes, so it is imprecise: a round goes to every node of a marked group,
--    and a node without a copy answers with a dummy acknowledgement (held = false);
--  * invalidate-type and update-type pages, and switching a page between them (a switch
--    to update recalls the owner with a downgrade, as start_switch does);
--  * remote states I, S, E, IS, ISP, IE, SE with the same events (Load, Store, Data, DataX,
--    Nack, Inv, Upd, Recall); home states None, Shared, Owned, RecallS, RecallX, InvRound,
--    UpdRound, where a busy home defers every request (it stays in the network);
--  * an unordered network (any message may overtake any other), silent replacement of a
--    shared copy (its sharer bit stays), nodes that learn a switch late (Nack).
-- A value no rule reads in the state it is left in is reset (the C++ leaves it stale): the
-- home's pending request and acknowledgement counts once served, the owner once the block
-- is not owned, a copy's value once the copy is gone, recallDown with no recall pending.
-- States that differ only in such values behave alike, and counting them apart made the
-- 3-node model 30 times larger than it is.
-- Not modelled: the home's own processor, exclusive write-backs (PutX), non-cacheable pages.
-- Properties: single writer / multiple readers; on invalidate pages every copy holds the last
-- written value; after an update round every copy equals the home's memory; every
-- (state, event) pair that occurs has a row (the undefined ones fail); the directory can
-- always go idle again (liveness: from every state, a state with no message in flight).
-- Mutants (models/core/mutant.h names), with rumur -DMUTANT=n... Murphi has no preprocessor,
-- so a constant selects them: MUTANT = 1 grant_before_all_acks (a round is done one
-- acknowledgement early); 2 coarsen_during_round (a round expects one more acknowledgement
-- than it was sent to, as when the set coarsens after planning).

const
  NR: 3;         -- remote nodes
  GROUP: 2;      -- nodes per leaf bit of the hierarchical bitmap
  NG: 2;         -- groups: ceil(NR / GROUP)
  NV: 2;         -- data values
  NET: 8;        -- network slots (too few is an error, "network full", never a silent cut)
  MUTANT: 0;

type
  Node: 0..NR-1;
  Slot: 0..NET-1;   -- network slots, kept sorted (send, clearSlot): any order of messages is one state
  Grp: 0..NG-1;
  Val: 0..NV-1;
  Proto: enum { PInv, PUpd };
  HSt: enum { HNone, HShared, HOwned, HRecallS, HRecallX, HInvRound, HUpdRound };
  RSt: enum { RI, RS, RE, RIS, RISP, RIE, RSE };
  MType: enum { GetS, GetX, WriteH, Recall, Inv, Upd, Data, DataX, Nack, WriteAck, RecallData, RoundAck, SwitchReq };
  Msg: record
    valid: boolean;
    mtype: MType;
    node: Node;       -- the remote node it comes from (requests, answers) or goes to
    toHome: boolean;
    val: Val;
    held: boolean;    -- RoundAck: the node held a copy
    down: boolean;    -- Recall: keep a shared copy
    proto: Proto;     -- the page's protocol as the sender sees it
  end;

var
  net: array [Slot] of Msg;
  hst: HSt;
  owner: Node;
  mem: Val;
  proto: Proto;
  sharers: array [Grp] of boolean;
  pend: Msg;          -- the request a busy home serves when its recall or round completes
  switchTo: Proto;    -- pend.mtype = SwitchReq: the protocol being switched to
  expected: 0..NR+1;
  got: 0..NR+1;
  rst: array [Node] of RSt;
  rval: array [Node] of Val;
  view: array [Node] of Proto;          -- the page's protocol as the node last heard it
  pw: array [Node] of boolean;          -- a write-through (WriteH) waits for its WriteAck
  recallPending: array [Node] of boolean;   -- a Recall that overtook the node's DataX
  recallDown: array [Node] of boolean;
  last: Val;          -- ghost: the last value written

function grp(n: Node): Grp; begin return n / GROUP; end;

-- The network is a multiset: its slots are kept sorted by msgKey with the empty ones last,
-- so two states that differ only in the order of their messages are the same state. (A
-- scalarset of slots does the same through Rumur's symmetry reduction, but it was 14 times
-- slower with 8 slots, most of them empty and equal.)
function mtNum(t: MType): 0..12;
begin
  switch t
  case GetS: return 0; case GetX: return 1; case WriteH: return 2; case Recall: return 3;
  case Inv: return 4; case Upd: return 5; case Data: return 6; case DataX: return 7;
  case Nack: return 8; case WriteAck: return 9; case RecallData: return 10;
  case RoundAck: return 11; case SwitchReq: return 12;
  endswitch;
end;

function msgKey(m: Msg): 0..65535;
var k: 0..65535;
begin
  if !m.valid then return 65535; endif;
  k := mtNum(m.mtype) * NR + m.node;
  k := k * 2; if m.toHome then k := k + 1; endif;
  k := k * NV + m.val;
  k := k * 2; if m.held then k := k + 1; endif;
  k := k * 2; if m.down then k := k + 1; endif;
  k := k * 2; if m.proto = PUpd then k := k + 1; endif;
  return k;
end;

-- send() inserts at the message's place, clearSlot() closes the gap: the slots stay sorted.
procedure send(t: MType; n: Node; toHome: boolean; v: Val; held: boolean; down: boolean; p: Proto);
var m: Msg; k: 0..65535; j: 0..NET;
begin
  if net[NET-1].valid then error "network full: raise NET"; endif;
  m.valid := true; m.mtype := t; m.node := n; m.toHome := toHome;
  m.val := v; m.held := held; m.down := down; m.proto := p;
  k := msgKey(m);
  j := NET;
  for i: Slot do
    if j = NET & msgKey(net[i]) > k then j := i; endif;
  endfor;
  for i: Slot do   -- shift j..NET-2 up by one, from the top
    if NET-1-i > j then net[NET-1-i] := net[NET-2-i]; endif;
  endfor;
  net[j] := m;
end;

function noMsg(): Msg;
var r: Msg;
begin
  r.valid := false; r.mtype := GetS; r.node := 0; r.toHome := false;
  r.val := 0; r.held := false; r.down := false; r.proto := PInv;
  return r;
end;

procedure clearSlot(i: Slot);
begin
  for s: Slot do
    if s >= i & s < NET-1 then net[s] := net[s+1]; endif;
  endfor;
  net[NET-1] := noMsg();
end;

-- start_round(): one message to every node of every marked group; the expected
-- acknowledgements are the targets.
procedure startRound(t: MType; v: Val);
begin
  expected := 0; got := 0;
  for n: Node do
    if sharers[grp(n)] then
      send(t, n, false, v, false, false, proto);
      expected := expected + 1;
    endif;
  endfor;
  if MUTANT = 2 then expected := expected + 1; endif;
end;

function anyTarget(): boolean;
begin
  for g: Grp do if sharers[g] then return true; endif; endfor;
  return false;
end;

-- home_dispatch(): a request on a stable home (None, Shared, Owned).
procedure dispatch(m: Msg);
begin
  switch m.mtype
  case GetS:
    if hst = HOwned then
      pend := m; hst := HRecallS; send(Recall, owner, false, 0, false, true, proto);
    else
      sharers[grp(m.node)] := true; hst := HShared;
      send(Data, m.node, false, mem, false, false, proto);
    endif;
  case GetX:
    if proto = PUpd then
      send(Nack, m.node, false, 0, false, false, proto);
    elsif hst = HOwned then
      pend := m; hst := HRecallX; send(Recall, owner, false, 0, false, false, proto);
    elsif hst = HShared & anyTarget() then
      pend := m; hst := HInvRound; startRound(Inv, 0);
    else
      sharers[grp(m.node)] := true; owner := m.node; hst := HOwned;
      send(DataX, m.node, false, mem, false, false, proto);
    endif;
  case WriteH:
    if hst = HOwned then
      pend := m; hst := HRecallX; send(Recall, owner, false, 0, false, false, proto);
    elsif hst = HShared & proto = PInv & anyTarget() then
      pend := m; hst := HInvRound; startRound(Inv, 0);
    elsif hst = HShared & anyTarget() then
      mem := m.val; last := m.val;
      pend := m; hst := HUpdRound; startRound(Upd, m.val);
    else
      mem := m.val; last := m.val; hst := HNone;
      send(WriteAck, m.node, false, 0, false, false, proto);
    endif;
  case SwitchReq:
    if hst = HOwned & m.proto = PUpd then
      pend := m; hst := HRecallS; send(Recall, owner, false, 0, false, true, proto);
    else
      proto := m.proto;
    endif;
  else
    error "dispatch: not a request";
  endswitch;
end;

procedure roundDone();
var m: Msg;
begin
  expected := 0; got := 0;
  m := pend; pend := noMsg();
  if hst = HInvRound then
    hst := HNone; dispatch(m);
  else
    hst := HShared;
    for n: Node do   -- the update checker: every copy equals the home's memory
      if rst[n] = RS | rst[n] = RSE then
        assert rval[n] = mem "update round done with a copy that differs from the home";
      endif;
    endfor;
    send(WriteAck, m.node, false, 0, false, false, proto);
  endif;
end;

procedure remoteData(n: Node; v: Val);
begin
  rval[n] := v;
end;

-- A Recall at the owner: RecallReply (downgrade to S or invalidate).
procedure recallReply(n: Node; down: boolean);
begin
  send(RecallData, n, true, rval[n], false, false, view[n]);
  if down then rst[n] := RS; else rst[n] := RI; rval[n] := 0; endif;
end;

startstate
  for i: Slot do net[i] := noMsg(); endfor;
  hst := HNone; owner := 0; mem := 0; proto := PInv; last := 0;
  for g: Grp do sharers[g] := false; endfor;
  pend := noMsg(); switchTo := PInv;
  expected := 0; got := 0;
  for n: Node do
    rst[n] := RI; rval[n] := 0; view[n] := PInv; pw[n] := false;
    recallPending[n] := false; recallDown[n] := false;
  endfor;
endstartstate;

-- ----------------------------------------------------------------- processors (remote)
ruleset n: Node do
  rule "load miss"
    rst[n] = RI & !pw[n] ==> send(GetS, n, true, 0, false, false, view[n]); rst[n] := RIS;
  endrule;

  rule "replace a shared copy (silently: its sharer bit stays)"
    rst[n] = RS ==> rst[n] := RI; rval[n] := 0;
  endrule;

  ruleset v: Val do
    rule "store, invalidate-type: own the block"
      view[n] = PInv & !pw[n] & (rst[n] = RI | rst[n] = RS) ==>
      send(GetX, n, true, 0, false, false, view[n]);
      if rst[n] = RI then rst[n] := RIE; else rst[n] := RSE; endif;
    endrule;

    rule "store in E"
      rst[n] = RE ==> rval[n] := v; last := v;
    endrule;

    rule "store, update-type: write through to the home"
      view[n] = PUpd & !pw[n] & (rst[n] = RI | rst[n] = RS) ==>
      pw[n] := true; send(WriteH, n, true, v, false, false, view[n]);
    endrule;
  endruleset;
endruleset;

ruleset p: Proto do
  rule "the OS switches the page's protocol"
    (hst = HNone | hst = HShared | hst = HOwned) & proto != p ==>
    var m: Msg;
    begin
      m := noMsg(); m.valid := true; m.mtype := SwitchReq; m.node := 0; m.toHome := true; m.proto := p;
      m.val := 0; m.held := false; m.down := false;
      dispatch(m);
  endrule;
endruleset;

-- ----------------------------------------------------------------- message delivery
ruleset i: Slot do
  rule "home receives a request"
    net[i].valid & net[i].toHome & (net[i].mtype = GetS | net[i].mtype = GetX | net[i].mtype = WriteH) &
    (hst = HNone | hst = HShared | hst = HOwned) ==>
    var m: Msg;
    begin
      m := net[i]; clearSlot(i);
      dispatch(m);
  endrule;

  rule "home receives an acknowledgement"
    net[i].valid & net[i].toHome & net[i].mtype = RoundAck ==>
    begin
      clearSlot(i);
      if MUTANT = 1 & !(hst = HInvRound | hst = HUpdRound) then
        -- the mutant ignores the late acknowledgement of a round it completed early
      else
        assert hst = HInvRound | hst = HUpdRound "acknowledgement for no round";
        got := got + 1;
        if got = expected | (MUTANT = 1 & expected > 1 & got + 1 = expected) then roundDone(); endif;
      endif;
  endrule;

  rule "home receives recalled data"
    net[i].valid & net[i].toHome & net[i].mtype = RecallData ==>
    var m: Msg;
    begin
      assert hst = HRecallS | hst = HRecallX "RecallData with no recall";
      mem := net[i].val; clearSlot(i);
      if hst = HRecallS then hst := HShared; else hst := HNone; endif;
      owner := 0;
      m := pend; pend := noMsg();
      if m.mtype = SwitchReq then proto := m.proto; else dispatch(m); endif;
  endrule;

  rule "a remote node receives a message"
    net[i].valid & !net[i].toHome ==>
    var m: Msg; n: Node;
    begin
      m := net[i]; n := m.node; clearSlot(i);
      switch m.mtype
      case Data:
        view[n] := m.proto;
        if rst[n] = RIS then rst[n] := RS; rval[n] := m.val;
        elsif rst[n] = RISP then rst[n] := RI;      -- FillOnce: the load uses it, no copy
        else error "undefined transition: Data"; endif;
      case DataX:
        view[n] := m.proto;
        if rst[n] = RIE | rst[n] = RSE then
          rst[n] := RE; rval[n] := m.val;
          if recallPending[n] then recallPending[n] := false; recallReply(n, recallDown[n]); recallDown[n] := false; endif;
        else error "undefined transition: DataX"; endif;
      case Nack:
        view[n] := m.proto;
        if rst[n] = RIE then rst[n] := RI;
        elsif rst[n] = RSE then rst[n] := RS;
        else error "undefined transition: Nack"; endif;
      case Inv, Upd:
        if rst[n] = RS | rst[n] = RSE then
          if m.mtype = Inv then
            if rst[n] = RS then rst[n] := RI; else rst[n] := RIE; endif;
            rval[n] := 0;
          else
            rval[n] := m.val;
          endif;
          send(RoundAck, n, true, 0, true, false, view[n]);
        elsif rst[n] = RIS then
          rst[n] := RISP; send(RoundAck, n, true, 0, false, false, view[n]);   -- Poison
        elsif rst[n] = RI | rst[n] = RISP | rst[n] = RIE then
          send(RoundAck, n, true, 0, false, false, view[n]);                 -- AckNo: a dummy ack
        else error "undefined transition: Inv/Upd in E"; endif;
      case Recall:
        if rst[n] = RE then recallReply(n, m.down);
        elsif rst[n] = RIE | rst[n] = RSE then recallPending[n] := true; recallDown[n] := m.down;
        else error "undefined transition: Recall"; endif;
      case WriteAck:
        assert pw[n] "WriteAck with no write";
        pw[n] := false;
      else
        error "a remote node got a request";
      endswitch;
  endrule;
endruleset;

-- ----------------------------------------------------------------- properties
invariant "single writer, multiple readers"
  forall a: Node do forall b: Node do
    (a != b & rst[a] = RE) -> (rst[b] != RE & rst[b] != RS & rst[b] != RSE)
  end end;

invariant "invalidate-type copies hold the last written value"
  forall n: Node do
    (proto = PInv & hst != HUpdRound & (rst[n] = RS | rst[n] = RSE | rst[n] = RE)) -> rval[n] = last
  end;

invariant "an owned block has its owner in E (or on the way there)"
  hst = HOwned -> (rst[owner] = RE | rst[owner] = RIE | rst[owner] = RSE)
    | exists i: Slot do net[i].valid & net[i].mtype = RecallData end;

liveness "the directory eventually goes idle"
  (hst = HNone | hst = HShared | hst = HOwned) & forall i: Slot do !net[i].valid end;
