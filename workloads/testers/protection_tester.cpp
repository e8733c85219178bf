#include "workloads/testers/protection_tester.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "models/core/error.h"
#include "models/mbcf/atomic.h"
#include "models/mbcf/packet.h"
#include "models/mbp2/mbp2_cards.h"
#include "workloads/trace/trace.h"

namespace mbpsim {

using nlohmann::json;
using nlohmann::ordered_json;
using namespace mbpsim::mbcf;
using trace::hex;  // "0x..."

void declare_protection_params(ParamSchema& s) {
  using T = ParamType;
  s.add({"protection.attacks", T::Json, json::array(), "", "protection: names of the attacks to run (empty: the whole catalogue)", -1e300, 1e300});
  s.add({"protection.answer_us", T::Double, 200000.0, "us", "protection: the longest wait for an attack's answer (status word or counters)", 1, 1e12});
  s.add({"protection.settle_us", T::Double, 2000.0, "us", "protection: how long the system runs on after the answer before the snapshot is compared (late effects show)", 0, 1e12});
}

namespace {

// The counters that name a rejection, by the end of their stats path (summed over nodes).
const char* const kRejections[] = {
    "mbcf.violations",        "mbcf.malformed",         "mbcf.duplicates",           "mbcf.out_of_order",
    "mbcf.stale_frames",      "mbcf.requests_refused",  "nic.rejected_requests",    "crypto.rejected_auth",
    "crypto.rejected_format", "crypto.rejected_plain",  "crypto.rejected_no_sa",     "crypto.rejected_replay",
    "mac.rx_oversized",
};

void sum_counters(const json& j, const std::string& path, std::map<std::string, uint64_t>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) sum_counters(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
    return;
  }
  if (!j.is_number_unsigned() && !j.is_number_integer()) return;
  for (const char* r : kRejections) {
    const std::string suffix = std::string(".") + r;
    if (path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0)
      out[r] += j.get<uint64_t>();
  }
}

std::vector<uint8_t> le32(uint32_t v) {
  std::vector<uint8_t> b(4);
  store_le(b.data(), 4, v);
  return b;
}

const char* answer_name(ProtectionTester::Answer a) {
  switch (a) {
    case ProtectionTester::Answer::Succeeded: return "succeeded";
    case ProtectionTester::Answer::Violation: return "violation";
    case ProtectionTester::Answer::NoAnswer: return "no_answer";
    case ProtectionTester::Answer::RefusedLocally: return "refused_by_sender";
    case ProtectionTester::Answer::Dropped: return "dropped";
  }
  return "?";
}

void put32be(std::vector<uint8_t>& f, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) f[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

}  // namespace

ProtectionTester::ProtectionTester(const Config& c, Stats& stats, uint64_t seed) : MbcfWorkload(c, stats, seed), stats_(stats), seed_(seed) {
  if (cfg_.nodes < 3) c.fail("mbcf.nodes", "workload.kind protection needs 3 nodes (a client, a server and an attacker)");
  settle_us_ = c.get_double("protection.settle_us");
  answer_us_ = c.get_double("protection.answer_us");
  auto* m = mbp2();
  mbp2_ = m != nullptr;
  if (m) {
    authenticated_ = m->mbp2_config().crypto.auth != mbp2::Auth::None;
    dh_keys_ = m->mbp2_config().crypto.keys == mbp2::CryptoConfig::Keys::Dh;
  }
  pb_ = cfg_.page_bytes;
  // The server's side (Figures 3.6, 3.7): a dummy task whose space is two pages of the working
  // area, read-write, and a third one read-only; a second dummy whose key the server has since
  // changed (the delegation revoked); a task that has died.
  Rng keys(seed, "protection.keys");
  auto key = [&] { return static_cast<uint32_t>(keys.next() | 1); };
  TaskSpace& ts = sys_->space(kServer);
  Task& server = *ts.find(kPtask);
  key_dummy_ = key();
  Task& dummy = sys_->create_task(kServer, kDummy, key_dummy_);
  ts.alias(server, kDst, dummy, kWindow, 2, kPermRW);
  ts.alias(server, kDst + 2 * pb_, dummy, kWindow + 2 * pb_, 1, kPermRead);
  key_rekeyed_old_ = key();
  Task& rekeyed = sys_->create_task(kServer, kRekeyed, key_rekeyed_old_);
  ts.alias(server, kDst + 3 * pb_, rekeyed, kWindow, 1, kPermRW);
  rekeyed.key = key();
  key_dead_ = key();
  Task& dead = sys_->create_task(kServer, kDead, key_dead_);
  ts.alias(server, kDst + 3 * pb_, dead, kWindow, 1, kPermRW);
  ts.remove(kDead);
  // The attacker's task-translation table: the delegation it was given, and entries with keys
  // it made up or kept. (An OS cannot check a key for a remote task: it records what it is told.)
  Task& a = *sys_->space(kAttacker).find(kPtask);
  a.ltt[kViaDummy] = LtaskEntry{kServer, kDummy, key_dummy_};
  a.ltt[kServerWithDummyKey] = LtaskEntry{kServer, kPtask, key_dummy_};
  a.ltt[kDummyForgedKey] = LtaskEntry{kServer, kDummy, key_dummy_ ^ static_cast<uint32_t>(keys.next() | 0x100)};
  a.ltt[kDeadTask] = LtaskEntry{kServer, kDead, key_dead_};
  a.ltt[kKernel] = LtaskEntry{kServer, kKernelPtask, 0};
  a.ltt[kStaleKey] = LtaskEntry{kServer, kRekeyed, key_rekeyed_old_};
  a.ltt[kDummyWithServerKey] = LtaskEntry{kServer, kDummy, server.key};
  a.ltt[kDummyWithOwnKey] = LtaskEntry{kServer, kDummy, a.key};
  // A second task on the attacker's node, whose doorbell alias the attacker may try (MBP2).
  sys_->create_task(kAttacker, kNeighbour, key());

  sys_->set_tx_hook([this](uint32_t from, uint32_t to, const Packet& p) {
    if (from == kAttacker && p.src_ptask == kPtask && !p.cmds.empty()) ++user_packets_;
    if (from == kServer)
      for (const Command& c : p.cmds)
        if (c.cmd == Cmd::Violation || (c.cmd == Cmd::Reply && to == kAttacker))
          answers_.push_back(c);
  });
  sys_->ether().set_tap([this](uint32_t dst, const std::vector<uint8_t>& f) {
    if (tap_ && tap_(dst, f)) tap_ = nullptr;
  });
  build_catalogue();
  const json& only = c.get_json("protection.attacks");
  if (!only.is_array()) c.fail("protection.attacks", "must be a list of attack names");
  if (!only.empty()) {
    std::vector<Attack> keep;
    for (size_t i = 0; i < only.size(); ++i) {
      auto it = only[i].is_string() ? std::find_if(attacks_.begin(), attacks_.end(), [&](const Attack& x) { return x.name == only[i].get<std::string>(); })
                                    : attacks_.end();
      if (it == attacks_.end()) c.fail_at("protection.attacks", "protection.attacks[" + std::to_string(i) + "]", "is not an attack of the catalogue (docs/CORRECTNESS.md lists them)");
      keep.push_back(*it);
    }
    attacks_ = std::move(keep);
  }
}

// ------------------------------------------------------------------ helpers

void ProtectionTester::after(double us, std::function<void()> fn) { cal_->after(static_cast<uint64_t>(us * 1e6), std::move(fn)); }

bool ProtectionTester::request(uint32_t node, uint32_t ltask, std::vector<Command> cmds, std::function<void()> k) {
  return sys_->syscall(node, kPtask, Request{ltask, std::move(cmds)}, std::move(k));
}

Command ProtectionTester::write(uint32_t laddr, std::vector<uint8_t> bytes, uint32_t slot, ReplyMode rm) const {
  Command c;
  c.cmd = Cmd::Write;
  c.laddr = laddr;
  c.length = static_cast<uint32_t>(bytes.size());
  c.data = std::move(bytes);
  c.opt.reply = rm;
  if (rm != ReplyMode::None) c.status_laddr = kStatus + kSlot0 + 4 * slot;
  return c;
}

Command ProtectionTester::read(uint32_t laddr, uint32_t len, uint32_t slot) const {
  Command c;
  c.cmd = Cmd::Read;
  c.laddr = laddr;
  c.length = len;
  c.data_laddr = kDst;
  c.opt.reply = ReplyMode::Status;
  c.status_laddr = kStatus + kSlot0 + 4 * slot;
  return c;
}

uint32_t ProtectionTester::status(uint32_t node, uint32_t slot) const {
  TaskSpace& ts = sys_->space(node);
  return ts.load32(*ts.find(kPtask), kStatus + kSlot0 + 4 * slot);
}

void ProtectionTester::set_status(uint32_t node, uint32_t slot, uint32_t v) {
  TaskSpace& ts = sys_->space(node);
  ts.store32(*ts.find(kPtask), kStatus + kSlot0 + 4 * slot, v);
}

std::vector<uint8_t> ProtectionTester::fill(uint32_t n, uint8_t salt) const {
  std::vector<uint8_t> d(n);
  for (uint32_t i = 0; i < n; ++i) d[i] = static_cast<uint8_t>(salt + 7 * i + 1);
  return d;
}

std::vector<uint8_t> ProtectionTester::frame_for(std::vector<Command> cmds, uint32_t dst_key, uint8_t ctrl) const {
  Packet p;
  p.dst_mac = mac_of(kServer);
  p.src_mac = mac_of(kAttacker);
  p.src_pnode = kAttacker;
  p.src_ptask = kPtask;
  p.src_key = sys_->space(kAttacker).find(kPtask)->key;
  p.dst_ptask = kDummy;
  p.dst_key = dst_key;
  p.ctrl_p = ctrl;
  p.cmds = std::move(cmds);
  std::vector<uint8_t> f;
  if (!encode(p, f)) internal_error("protection: a wire attack's base frame does not encode");
  return f;
}

void ProtectionTester::inject(uint32_t from, std::vector<uint8_t> frame) { sys_->ether().send(from, kServer, std::move(frame), nullptr); }

std::map<std::string, uint64_t> ProtectionTester::rejection_counters() const {
  std::map<std::string, uint64_t> m;
  for (const char* r : kRejections) m[r] = 0;
  sum_counters(stats_.dump(), "", m);
  return m;
}

ProtectionTester::Snapshot ProtectionTester::snapshot() {
  Snapshot s;
  for (uint32_t n = 0; n < sys_->nodes(); ++n) {
    TaskSpace& ts = sys_->space(n);
    std::map<uint32_t, std::vector<uint8_t>> frames;
    std::ostringstream meta;
    for (auto& [ptask, t] : ts.tasks()) {
      meta << "task " << ptask << " key " << t->key << " taskque " << t->has_taskque << "/" << t->taskque.size() << " blocked " << t->blocked << "\n";
      std::map<uint32_t, const Pte*> pages;
      for (const auto& [pg, pte] : t->pages) pages[pg] = &pte;
      for (const auto& [pg, pte] : pages) {
        meta << " page " << pg << " frame " << pte->frame << " perm " << int(pte->perm) << " present " << pte->present << " valid " << pte->valid
             << " pattern " << pte->in_pattern << "/" << pte->pattern_id << "/" << pte->children.size() << "\n";
        if (!frames.count(pte->frame)) frames[pte->frame].assign(ts.frame(pte->frame), ts.frame(pte->frame) + pb_);
      }
      std::map<uint32_t, LtaskEntry> ltt(t->ltt.begin(), t->ltt.end());
      for (const auto& [l, e] : ltt) meta << " ltask " << l << " -> " << e.pnode << ":" << e.ptask << " key " << e.key << "\n";
    }
    s.frames.push_back(std::move(frames));
    s.meta.push_back(meta.str());
  }
  return s;
}

void ProtectionTester::power_cycle(uint32_t node, std::function<void()> k) {
  sys_->power_off(node);
  after(1000, [this, node, k = std::move(k)] {
    sys_->power_on(node);
    // A fresh write from the client shows the pair talks again (Hello answered, keys remade).
    set_status(kClient, 1, kSentinel);
    if (!request(kClient, kServer, {write(kDst + 0x300, le32(0x5EED), 1)})) internal_error("protection: the client's request was refused");
    poll_until([this] { return status(kClient, 1) != kSentinel; }, k);
  });
}

void ProtectionTester::replay(Expect& e, bool no_flow, std::function<void(std::function<void()>)> between, std::function<void()> done) {
  constexpr uint32_t word = kDst + 0x200;
  auto rec = std::make_shared<std::vector<uint8_t>>();
  auto* m = mbp2();
  // The recorder: the first frame on the wire from the client to the server carrying the write.
  tap_ = [this, rec, m](uint32_t dst, const std::vector<uint8_t>& f) {
    if (dst != kServer) return false;
    std::vector<uint8_t> plain = f;
    if (m && authenticated_) {
      const mbp2::SecurityAssociation* sa = m->nic(kServer).sa(kClient);
      if (!sa || sa->open(plain) != mbp2::OpenError::None) return false;
    }
    Packet p;
    if (decode(plain.data(), plain.size(), p) != DecodeError::None) return false;
    if (p.src_pnode != kClient || p.cmds.empty() || p.cmds[0].cmd != Cmd::Write || p.cmds[0].laddr != word) return false;
    *rec = f;
    return true;
  };
  Command w = write(word, le32(0xC0DE0001));
  w.opt.no_flow_control = no_flow;
  if (!request(kClient, kServer, {w})) internal_error("protection: the client's request was refused");
  e.writes.push_back(Write{kServer, kPtask, word, 4, le32(0x0BADF00D)});
  e.writes.push_back(Write{kClient, kPtask, kStatus + kSlot0, 8, {}});
  e.writes.push_back(Write{kServer, kPtask, kDst + 0x300, 4, {}});
  poll_until([this] { return status(kClient, 0) != kSentinel; }, [this, rec, between, done] {
    tap_ = nullptr;
    // The server's own store: a replay that ran again would put the old value back.
    TaskSpace& ts = sys_->space(kServer);
    ts.store32(*ts.find(kPtask), word, 0x0BADF00D);
    between([this, rec, done] {
      answers_.clear();
      if (rec->empty()) {
        extra_failure_ = "no frame of the write was seen on the wire";
      } else {
        inject(kClient, *rec);
      }
      done();
    });
  });
}

void ProtectionTester::poll_until(std::function<bool()> pred, std::function<void()> k, uint64_t deadline) {
  if (deadline == 0) deadline = now() + static_cast<uint64_t>(answer_us_ * 1e6);
  if (pred() || now() >= deadline) return k();
  after(100, [this, pred = std::move(pred), k = std::move(k), deadline]() mutable { poll_until(std::move(pred), std::move(k), deadline); });
}

// ------------------------------------------------------------------ the catalogue

void ProtectionTester::build_catalogue() {
  constexpr uint32_t W = kWindow;
  const uint32_t PB = pb_;
  using A = Answer;
  auto add = [this](std::string name, std::string cat, std::function<void(Expect&, std::function<void()>)> run, std::string skip = "") {
    attacks_.push_back(Attack{std::move(name), std::move(cat), std::move(skip), std::move(run)});
  };
  // An attack made of one request from the attacker's task.
  auto one = [this](uint32_t ltask, std::vector<Command> cmds, A answer, ViolationCode code, std::map<std::string, uint64_t> counters,
                    std::vector<Write> writes = {}) {
    return [this, ltask, cmds, answer, code, counters, writes](Expect& e, std::function<void()> done) {
      e.answer = answer;
      e.code = code;
      e.counters = counters;
      e.writes = writes;
      refused_ = !request(kAttacker, ltask, cmds);
      done();
    };
  };
  const std::map<std::string, uint64_t> violation{{"mbcf.violations", 1}}, refused{{"mbcf.requests_refused", 1}};

  // --- keys (3.4: the key is the capability)
  add("forged_key", "key", one(kDummyForgedKey, {write(W, fill(4, 1))}, A::Violation, ViolationCode::BadKey, violation));
  add("stale_key", "key", one(kStaleKey, {write(W, fill(4, 2))}, A::Violation, ViolationCode::BadKey, violation));
  add("server_key_on_dummy", "key", one(kDummyWithServerKey, {write(W, fill(4, 3))}, A::Violation, ViolationCode::BadKey, violation));
  add("own_key_on_dummy", "key", one(kDummyWithOwnKey, {write(W, fill(4, 4))}, A::Violation, ViolationCode::BadKey, violation));
  add("dummy_key_on_server", "key", one(kServerWithDummyKey, {write(kDst, fill(4, 5))}, A::Violation, ViolationCode::BadKey, violation));
  add("forged_key_no_reply", "key", one(kDummyForgedKey, {write(W, fill(4, 6), 0, ReplyMode::None)}, A::NoAnswer, ViolationCode::None, violation));
  add("forged_key_only_failures", "key",
      one(kDummyForgedKey, {write(W, fill(4, 7), 0, ReplyMode::OnlyFailures)}, A::Violation, ViolationCode::BadKey, violation));
  // --- tasks
  add("ltask_not_in_table", "task", one(kNotInTable, {write(W, fill(4, 8))}, A::RefusedLocally, ViolationCode::None, refused));
  add("dead_task", "task", one(kDeadTask, {write(W, fill(4, 9))}, A::Violation, ViolationCode::NoSuchTask, violation));
  add("kernel_as_target", "tables", one(kKernel, {write(0x1000, fill(4, 10))}, A::Violation, ViolationCode::NoSuchTask, violation));
  // --- windows (the dummy's space: [W, W+2PB) read-write, [W+2PB, W+3PB) read-only)
  add("first_byte_of_window", "window",
      one(kViaDummy, {write(W, fill(4, 11))}, A::Succeeded, ViolationCode::None, {}, {Write{kServer, kPtask, kDst, 4, fill(4, 11)}}));
  add("last_byte_of_window", "window",
      one(kViaDummy, {write(W + 2 * PB - 1, fill(1, 12))}, A::Succeeded, ViolationCode::None, {}, {Write{kServer, kPtask, kDst + 2 * PB - 1, 1, fill(1, 12)}}));
  add("one_below_window", "window", one(kViaDummy, {write(W - 4, fill(4, 13))}, A::Violation, ViolationCode::Unmapped, violation));
  add("straddling_the_start", "window", one(kViaDummy, {write(W - 2, fill(4, 14))}, A::Violation, ViolationCode::Unmapped, violation));
  add("one_past_writable", "window", one(kViaDummy, {write(W + 2 * PB, fill(4, 15))}, A::Violation, ViolationCode::Protection, violation));
  add("one_past_window", "window", one(kViaDummy, {write(W + 3 * PB, fill(4, 16))}, A::Violation, ViolationCode::Unmapped, violation));
  add("wrapping_around", "window", one(kViaDummy, {write(0xFFFFFFFCu, fill(8, 17))}, A::Violation, ViolationCode::Unmapped, violation));
  add("crossing_into_read_only", "window", one(kViaDummy, {write(W + 2 * PB - 4, fill(8, 18))}, A::Violation, ViolationCode::Protection, violation));
  add("read_crossing_out_of_window", "window", one(kViaDummy, {read(W + 3 * PB - 4, 8)}, A::Violation, ViolationCode::Unmapped, violation));
  add("server_address_through_dummy", "window", one(kViaDummy, {write(kDst, fill(4, 19))}, A::Violation, ViolationCode::Unmapped, violation));
  {
    Command fa;
    fa.cmd = Cmd::FetchAdd;
    fa.laddr = W + PB - 4;
    fa.length = 8;
    fa.data = fill(8, 20);
    fa.data_laddr = kDst;
    fa.opt.reply = ReplyMode::Status;
    fa.status_laddr = kStatus + kSlot0;
    add("atomic_across_pages", "window", one(kViaDummy, {fa}, A::Violation, ViolationCode::PageCrossing, violation));
  }
  add("read_of_read_only_page", "window", [this, PB](Expect& e, std::function<void()> done) {
    // Allowed: the bytes come back into the attacker's own memory, equal to the server's.
    e.answer = A::Succeeded;
    TaskSpace& ts = sys_->space(kServer);
    ts.write(*ts.find(kPtask), kDst + 2 * PB, fill(16, 21).data(), 16);
    e.writes.push_back(Write{kServer, kPtask, kDst + 2 * PB, 16, fill(16, 21)});
    TaskSpace& as = sys_->space(kAttacker);
    as.write(*as.find(kPtask), kDst, std::vector<uint8_t>(16, 0).data(), 16);
    refused_ = !request(kAttacker, kViaDummy, {read(W + 2 * PB, 16)});
    e.check = [this] {
      std::vector<uint8_t> got(16);
      TaskSpace& as = sys_->space(kAttacker);
      as.read(*as.find(kPtask), kDst, got.data(), 16);
      return got == fill(16, 21) ? std::string() : std::string("the READ's data did not arrive");
    };
    done();
  });
  // --- lengths
  add("zero_length_write", "length", one(kViaDummy, {write(W + 2 * PB, {})}, A::Succeeded, ViolationCode::None, {}));
  add("oversized_write", "length", one(kViaDummy, {write(W, fill(1500, 22))}, A::RefusedLocally, ViolationCode::None, refused));
  {
    Command bad = write(W, fill(4, 23));
    bad.length = 64;  // says 64, carries 4
    add("length_disagrees_with_data", "length", one(kViaDummy, {bad}, A::RefusedLocally, ViolationCode::None, refused));
  }
  add("read_reply_too_big", "length", one(kViaDummy, {read(W, 2000)}, A::RefusedLocally, ViolationCode::None, refused));
  // --- combined packets (4.4: one lump, all or nothing)
  add("combined_one_bad_among_good", "combined", [this, PB](Expect& e, std::function<void()> done) {
    e.answer = A::Violation;
    e.code = ViolationCode::Protection;
    e.index = 1;
    e.counters = {{"mbcf.violations", 1}};
    refused_ = !request(kAttacker, kViaDummy, {write(W, fill(4, 24), 0), write(W + 2 * PB, fill(4, 25), 1), write(W + 8, fill(4, 26), 2)});
    done();
  });
  {
    Command fa;
    fa.cmd = Cmd::FetchAdd;
    fa.laddr = W + 8;
    fa.length = 4;
    fa.data = fill(4, 27);
    fa.data_laddr = kDst;
    add("combined_with_an_atomic", "combined", one(kViaDummy, {write(W, fill(4, 28)), fa}, A::RefusedLocally, ViolationCode::None, refused));
  }
  add("combined_forged_key", "combined",
      one(kDummyForgedKey, {write(W, fill(4, 29)), write(W + 8, fill(4, 30))}, A::Violation, ViolationCode::BadKey, violation));
  // --- tables and kernel commands (nothing a user sends reaches a translation table)
  add("kernel_commands_from_a_user", "tables", [this](Expect& e, std::function<void()> done) {
    e.answer = A::RefusedLocally;
    e.counters = {{"mbcf.requests_refused", 3}};
    bool any = false;
    for (Cmd k : {Cmd::Ack, Cmd::Reply, Cmd::Violation}) {
      Command c;
      c.cmd = k;
      c.laddr = W;
      c.status_laddr = kStatus;
      c.status = 1;
      any |= request(kAttacker, kViaDummy, {c});
    }
    refused_ = !any;
    done();
  });
  {
    Command inv;
    inv.cmd = Cmd::Invalidate;
    inv.laddr = W;
    inv.opt.reply = ReplyMode::Status;
    inv.status_laddr = kStatus + kSlot0;
    add("invalidate_outside_a_pattern", "tables", one(kViaDummy, {inv}, A::Violation, ViolationCode::BadStructure, violation));
    Command up = write(W, fill(4, 31));
    up.cmd = Cmd::Update;
    add("update_outside_a_pattern", "tables", one(kViaDummy, {up}, A::Violation, ViolationCode::BadStructure, violation));
  }
  // --- doorbells (8.3.2: the NIC names the task by the alias it rang; the OS maps a task its own
  // alias page alone, so a store through another faults in its MMU and never reaches the card)
  const std::string no_doorbell = mbp2_ ? "" : "MBCF/Ether has no doorbells: requests are system calls";
  for (const bool assigned : {true, false})
    add(assigned ? "neighbours_doorbell_alias" : "unassigned_doorbell_alias", "doorbell", [this, assigned](Expect& e, std::function<void()> done) {
      e.answer = A::NoAnswer;
      e.counters = {{"nic.rejected_requests", 1}};
      auto* m = mbp2();
      const uint32_t alias = assigned ? m->nic(kAttacker).alias_of(kNeighbour) : 4000;
      refused_ = !m->nic(kAttacker).ring(kPtask, alias, Request{kViaDummy, {write(W, fill(4, 32))}}, [] {});
      done();
    }, no_doorbell);

  // --- the wire: a faulty or hostile station sends frames no kernel would build
  const std::map<std::string, uint64_t> wire_reject = authenticated_ ? std::map<std::string, uint64_t>{{"crypto.rejected_plain", 1}}
                                                                     : std::map<std::string, uint64_t>{{"mbcf.malformed", 1}};
  auto wire = [this, wire_reject](std::function<std::vector<uint8_t>()> make, std::map<std::string, uint64_t> counters = {}) {
    return [this, make, counters, wire_reject](Expect& e, std::function<void()> done) {
      e.answer = A::Dropped;
      e.counters = counters.empty() ? wire_reject : counters;
      inject(kAttacker, make());
      done();
    };
  };
  auto two = [this] { return frame_for({write(W, fill(16, 33), 0, ReplyMode::None), write(W + 64, fill(16, 34), 0, ReplyMode::None)}, key_dummy_, kNoFlow); };
  // Layout (packet.h): header 40, first WRITE (word, laddr, length, 16 data) at 40..67, second at 68..95.
  add("wire_truncated_subcommand", "wire", wire([two] {
        auto f = two();
        f.resize(78);
        f[14] = 0;
        f[15] = 78;
        return f;
      }));
  add("wire_count_says_more", "wire", wire([two] {
        auto f = two();
        f[69] |= 0x02;  // "another command follows" on the last one
        return f;
      }));
  add("wire_count_says_fewer", "wire", wire([two] {
        auto f = two();
        f[41] &= static_cast<uint8_t>(~0x02);  // the first says it is the last
        return f;
      }));
  add("wire_total_length_zero", "wire", wire([two] {
        auto f = two();
        f[14] = f[15] = 0;
        return f;
      }));
  add("wire_total_length_past_the_frame", "wire", wire([two] {
        auto f = two();
        const uint32_t n = static_cast<uint32_t>(f.size()) + 100;
        f[14] = static_cast<uint8_t>(n >> 8);
        f[15] = static_cast<uint8_t>(n);
        return f;
      }));
  // The MBP2's MAC drops a frame longer than Ethernet allows before it takes a receive buffer.
  const std::map<std::string, uint64_t> giant = mbp2_ ? std::map<std::string, uint64_t>{{"mac.rx_oversized", 1}} : wire_reject;
  add("wire_oversized_frame", "wire", wire([this] {
        auto f = frame_for({write(W, fill(1400, 35), 0, ReplyMode::None)}, key_dummy_, kNoFlow);
        f.resize(f.size() + 200, 0x5A);
        put32be(f, 48, 1600);  // the WRITE's length, and the total, agree with the frame
        const uint32_t n = static_cast<uint32_t>(f.size());
        f[14] = static_cast<uint8_t>(n >> 8);
        f[15] = static_cast<uint8_t>(n);
        return f;
      }, giant));
  add("wire_data_length_past_the_end", "wire", wire([this] {
        auto f = frame_for({write(W, fill(16, 36), 0, ReplyMode::None)}, key_dummy_, kNoFlow);
        put32be(f, 48, 64);
        return f;
      }));
  add("wire_claims_to_be_the_target", "wire", wire([this] {
        auto f = frame_for({write(W, fill(16, 37), 0, ReplyMode::None)}, key_dummy_, kNoFlow);
        put32be(f, 16, kServer);
        return f;
      }));
  add("wire_forged_key", "wire",
      wire([this] { return frame_for({write(W, fill(16, 38), 0, ReplyMode::None)}, key_dummy_ ^ 0x40, kNoFlow); },
           authenticated_ ? std::map<std::string, uint64_t>{} : std::map<std::string, uint64_t>{{"mbcf.violations", 1}}));

  add("wire_read_reply_too_big", "wire", [this](Expect& e, std::function<void()> done) {
    // Well formed, with the right key, but its reply cannot fit a frame: the target must not
    // trust the sender to have checked (4.4).
    Command r = read(W, 4000);
    r.opt.no_flow_control = true;
    if (authenticated_) {
      e.answer = A::Dropped;
      e.counters = {{"crypto.rejected_plain", 1}};
    } else {
      e.answer = A::Violation;
      e.code = ViolationCode::BadLength;
      e.counters = {{"mbcf.violations", 1}};
    }
    inject(kAttacker, frame_for({r}, key_dummy_, kNoFlow));
    done();
  });

  // --- replays of what the client sent the server
  const auto replay_reject = authenticated_ ? std::map<std::string, uint64_t>{{"crypto.rejected_replay", 1}}
                                            : std::map<std::string, uint64_t>{{"mbcf.duplicates", 1}};
  add("replay_within_a_connection", "replay", [this, replay_reject](Expect& e, std::function<void()> done) {
    e.answer = A::Dropped;
    e.counters = replay_reject;
    replay(e, false, [](std::function<void()> k) { k(); }, std::move(done));
  });
  const std::string unauthenticated =
      authenticated_ ? "" : "frames are not authenticated (no crypto.auth): the system trusts its LAN, as MBCF/Ether does, so a replay that Go-back-N numbering cannot stop is executed (docs/CORRECTNESS.md)";
  add("replay_of_a_no_flow_control_packet", "replay", [this](Expect& e, std::function<void()> done) {
    e.answer = A::Dropped;
    e.counters = {{"crypto.rejected_replay", 1}};
    replay(e, true, [](std::function<void()> k) { k(); }, std::move(done));
  }, unauthenticated);
  for (const uint32_t who : {kClient, kServer})
    add(who == kClient ? "replay_after_the_sender_restarted" : "replay_after_the_receiver_restarted", "replay",
        [this, who](Expect& e, std::function<void()> done) {
          e.answer = A::Dropped;
          // New keys after a key exchange: the old frame no longer authenticates. Static keys
          // and their counters survive (RFC 4303 3.3.3): the window still holds it.
          e.counters = {{dh_keys_ ? "crypto.rejected_auth" : "crypto.rejected_replay", 1}};
          // What the restart itself throws away (frames in flight, Go-back-N state).
          e.dont_care = {"crypto.rejected_no_sa", "mbcf.stale_frames", "mbcf.duplicates", "mbcf.out_of_order"};
          e.writes.push_back(Write{kClient, kPtask, kStatus + kSlot0 + 4, 4, {}});
          replay(e, false, [this, who](std::function<void()> k) { power_cycle(who, std::move(k)); }, std::move(done));
        },
        unauthenticated);
}

// ------------------------------------------------------------------ running

// The first attack waits a microsecond: the runner clears the stats at the end of the (empty)
// warm-up, after start() has run.
void ProtectionTester::start() { after(1, [this] { next(); }); }

void ProtectionTester::next() {
  while (cur_ < attacks_.size() && !attacks_[cur_].skip.empty()) {
    results_.push_back(Result{attacks_[cur_].name, attacks_[cur_].category, "skipped", attacks_[cur_].skip});
    ++cur_;
  }
  if (cur_ == attacks_.size()) return finish();
  ex_ = Expect{};
  answers_.clear();
  user_packets_ = 0;
  refused_ = false;
  extra_failure_.clear();
  for (uint32_t s = 0; s < 4; ++s) {
    set_status(kAttacker, s, kSentinel);
    set_status(kClient, s, kSentinel);
  }
  before_ = snapshot();
  counters_before_ = rejection_counters();
  attacks_[cur_].run(ex_, [this] { wait_answer(now() + static_cast<uint64_t>(answer_us_ * 1e6)); });
}

bool ProtectionTester::answered() const {
  if ((ex_.answer == Answer::Succeeded || ex_.answer == Answer::Violation) && status(kAttacker, 0) == kSentinel) return false;
  const auto now_c = rejection_counters();
  for (const auto& [k, v] : ex_.counters)
    if (now_c.at(k) - counters_before_.at(k) < v) return false;
  return true;
}

void ProtectionTester::wait_answer(uint64_t deadline) {
  if (answered() || now() >= deadline) return after(settle_us_, [this] { evaluate(); });
  after(100, [this, deadline] { wait_answer(deadline); });
}

void ProtectionTester::evaluate() {
  std::vector<std::string> bad;
  if (!extra_failure_.empty()) bad.push_back(extra_failure_);
  // 1. The answer.
  const uint32_t st = status(kAttacker, 0);
  uint32_t violations = 0, replies = 0;
  const Command* v = nullptr;
  for (const Command& c : answers_) {
    if (c.cmd == Cmd::Violation) {
      ++violations;
      v = &c;
    } else {
      ++replies;
    }
  }
  switch (ex_.answer) {
    case Answer::Succeeded:
      if (st != static_cast<uint32_t>(Status::Succeeded)) bad.push_back("status " + hex(st) + ", not succeeded");
      if (violations) bad.push_back("a VIOLATION was sent");
      break;
    case Answer::Violation:
      if (st != static_cast<uint32_t>(Status::Violation)) bad.push_back("status " + hex(st) + ", not violation");
      if (violations != 1 || replies) bad.push_back(std::to_string(violations) + " VIOLATION and " + std::to_string(replies) + " REPLY messages, not one VIOLATION");
      if (v && v->status != static_cast<uint32_t>(ex_.code))
        bad.push_back(std::string("violation code ") + to_string(static_cast<ViolationCode>(v->status)) + ", not " + to_string(ex_.code));
      if (v && v->aux != ex_.index) bad.push_back("violation names command " + std::to_string(v->aux) + ", not " + std::to_string(ex_.index));
      break;
    case Answer::NoAnswer:
    case Answer::Dropped:
      if (st != kSentinel) bad.push_back("the attacker's status word changed to " + hex(st));
      if (violations || replies) bad.push_back("an answer was sent (" + std::to_string(violations) + " VIOLATION, " + std::to_string(replies) + " REPLY)");
      break;
    case Answer::RefusedLocally:
      if (!refused_) bad.push_back("the sender accepted the request");
      if (user_packets_) bad.push_back(std::to_string(user_packets_) + " packets left the attacker's node");
      if (violations || replies) bad.push_back("an answer was sent");
      break;
  }
  if ((ex_.answer == Answer::Succeeded || ex_.answer == Answer::Violation || ex_.answer == Answer::NoAnswer) && refused_)
    bad.push_back("the sender refused the request");
  // 2. The counters: each expected rejection once, no other.
  const auto after_c = rejection_counters();
  for (const auto& [k, b] : counters_before_) {
    if (ex_.dont_care.count(k)) continue;
    const uint64_t want = ex_.counters.count(k) ? ex_.counters.at(k) : 0, got = after_c.at(k) - b;
    if (got != want) bad.push_back(k + " rose by " + std::to_string(got) + ", not " + std::to_string(want));
  }
  // 3. Memory and tables.
  const Snapshot now_s = snapshot();
  for (uint32_t n = 0; n < sys_->nodes(); ++n) {
    if (now_s.meta[n] != before_.meta[n]) {
      std::istringstream a(before_.meta[n]), b(now_s.meta[n]);
      std::string la, lb;
      while (std::getline(a, la) && std::getline(b, lb) && la == lb) {
      }
      bad.push_back("node " + std::to_string(n) + " tables changed: '" + la + "' became '" + lb + "'");
    }
    if (n == kAttacker) continue;  // its own memory
    TaskSpace& ts = sys_->space(n);
    // Which (frame, offset) the attack may change.
    std::set<std::pair<uint32_t, uint32_t>> ok;
    for (const Write& w : ex_.writes) {
      if (w.node != n) continue;
      const Task* t = ts.find(w.ptask);
      for (uint32_t i = 0; t && i < std::max<uint32_t>(w.len, static_cast<uint32_t>(w.bytes.size())); ++i) {
        auto it = t->pages.find(ts.page_of(w.laddr + i));
        if (it != t->pages.end()) ok.insert({it->second.frame, (w.laddr + i) % pb_});
      }
      if (!w.bytes.empty() && t) {
        std::vector<uint8_t> got(w.bytes.size());
        ts.read(*t, w.laddr, got.data(), static_cast<uint32_t>(got.size()));
        if (got != w.bytes) bad.push_back("node " + std::to_string(n) + " task " + std::to_string(w.ptask) + " " + hex(w.laddr) + " does not hold what was written");
      }
    }
    uint32_t shown = 0;
    for (const auto& [f, bytes] : now_s.frames[n]) {
      auto it = before_.frames[n].find(f);
      if (it == before_.frames[n].end()) continue;
      for (uint32_t o = 0; o < pb_ && shown < 3; ++o)
        if (bytes[o] != it->second[o] && !ok.count({f, o})) {
          ++shown;
          bad.push_back("node " + std::to_string(n) + " frame " + std::to_string(f) + " byte " + hex(o) + " changed " + hex(it->second[o]) + " -> " + hex(bytes[o]) +
                        " outside what the attack may change");
        }
    }
  }
  if (ex_.check) {
    const std::string s = ex_.check();
    if (!s.empty()) bad.push_back(s);
  }
  Result r{attacks_[cur_].name, attacks_[cur_].category, bad.empty() ? "pass" : "fail", ""};
  r.answer = answer_name(ex_.answer);
  for (size_t i = 0; i < bad.size(); ++i) r.detail += (i ? "; " : "") + bad[i];
  if (!bad.empty()) {
    ++failed_;
    if (first_failure_.empty()) first_failure_ = r.name + ": " + r.detail;
    std::fprintf(stderr, "protection: attack %s failed (seed %llu): %s\n", r.name.c_str(), static_cast<unsigned long long>(seed_), r.detail.c_str());
  }
  results_.push_back(std::move(r));
  ++cur_;
  next();
}

ordered_json ProtectionTester::summary() const {
  ordered_json s;
  s["finished"] = done_;
  uint32_t pass = 0, skipped = 0;
  ordered_json list = ordered_json::array();
  for (const Result& r : results_) {
    pass += r.outcome == "pass";
    skipped += r.outcome == "skipped";
    ordered_json a;
    a["name"] = r.name;
    a["category"] = r.category;
    a["outcome"] = r.outcome;
    if (!r.answer.empty()) a["answer"] = r.answer;
    if (!r.detail.empty()) a["detail"] = r.detail;
    list.push_back(a);
  }
  s["attacks"] = list.size();
  s["passed"] = pass;
  s["failed"] = failed_;
  s["skipped"] = skipped;
  s["results"] = list;
  return s;
}

std::string ProtectionTester::check_failed() const {
  if (!failed_) return "";
  return "protection tester: " + std::to_string(failed_) + " attack(s) failed; first: " + first_failure_;
}

std::string ProtectionTester::progress(double) const {
  return "attack " + std::to_string(std::min(cur_ + 1, attacks_.size())) + "/" + std::to_string(attacks_.size());
}

}  // namespace mbpsim
