// `mbpsim trace validate`: runs the synchronisation of every thread abstractly, streaming, to
// prove that a replay can honour it. Memory records are read (and so checked) and skipped.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "models/core/error.h"
#include "workloads/trace/trace.h"

namespace mbpsim::trace {

namespace {

std::string describe(const Record& r) {
  std::string s = name(r.kind);
  switch (r.kind) {
    case Kind::Load:
    case Kind::Store:
    case Kind::Rmw: return s + " " + hex(r.addr) + " " + std::to_string(r.size);
    case Kind::Create:
    case Kind::Join: return s + " thread " + std::to_string(r.thread);
    case Kind::Dep: return s + " thread " + std::to_string(r.thread) + " record #" + std::to_string(r.seq);
    case Kind::Barrier: return s + " " + hex(r.addr) + " episode " + std::to_string(r.seq) + " of " + std::to_string(r.count);
    case Kind::Acquire:
    case Kind::Post:
    case Kind::Wait:
    case Kind::CondWait:
    case Kind::Signal:
    case Kind::Broadcast: return s + " " + hex(r.addr) + " #" + std::to_string(r.seq);
    case Kind::Release: return s + " " + hex(r.addr);
    default: return s;
  }
}

class Validator {
 public:
  explicit Validator(const std::string& dir) : dir_(dir), meta_(read_meta(dir)) {
    for (uint32_t t = 0; t < meta_.threads; ++t) {
      th_.push_back(Thread{open_stream(dir, meta_, t)});
    }
    th_[0].created = true;
    collect_sync_objects();
  }

  ValidateResult run() {
    size_t ended = 0;
    for (;;) {
      bool progress = false;
      changed_ = false;
      for (uint32_t t = 0; t < th_.size(); ++t) {
        Thread& T = th_[t];
        if (T.ended || !T.created) continue;
        while (!T.ended) {
          if (!T.has_pending) {
            if (!T.in->next(T.rec)) fail(t, "the stream ends without an 'end' record");
            ++res_.records;
            if (!is_memory(T.rec.kind)) ++res_.sync_events;
            T.has_pending = true;
            T.pending_index = T.in->index() - 1;
          }
          if (!step(t)) break;
          if (T.rec.kind != Kind::Dep) ++T.passed;
          T.has_pending = false;
          progress = true;
        }
        if (T.ended) ++ended;
      }
      if (ended == th_.size()) break;
      if (!progress && !changed_) deadlock();
    }
    for (const auto& b : barriers_)
      if (b.second.arrived)
        throw UserError(meta_path(dir_) + ": barrier " + hex(b.first) + " episode " + std::to_string(b.second.episode) + " ends with " +
                        std::to_string(b.second.arrived) + " of " + std::to_string(b.second.participants) + " participants");
    return res_;
  }

 private:
  struct Thread {
    std::unique_ptr<StreamReader> in;
    bool created = false, began = false, ended = false, in_roi = false;
    bool has_pending = false, waiting_barrier = false;
    Record rec;
    uint64_t pending_index = 0;
    uint64_t passed = 0;  // records run, deps not counted (what another thread's dep names)
    std::unordered_set<uint64_t> held;
  };
  struct Lock {
    int64_t holder = -1;
    uint64_t next = 0;
  };
  struct Barrier {
    uint64_t episode = 0;
    uint32_t participants = 0, arrived = 0;
  };
  struct Sem {
    uint64_t posts = 0;
    std::vector<bool> consumed;
  };

  [[noreturn]] void fail(uint32_t t, const std::string& what) const {
    const Thread& T = th_[t];
    throw UserError(T.in->file() + ": thread " + std::to_string(t) + ", record " + std::to_string(T.pending_index) + " (" +
                    describe(T.rec) + "): " + what);
  }

  // One object's state words (sync_word .. + sync_state_bytes) and what it is.
  struct SyncObject {
    uint64_t lo, hi;
    const char* what;
  };

  // A first pass over the streams: where the replay will keep each synchronisation object's
  // state. Two objects sharing a word, or of two kinds at one address, could not both be
  // replayed; the second pass then rejects program stores into those words.
  void collect_sync_objects() {
    std::map<uint64_t, SyncObject> by_word;
    for (uint32_t t = 0; t < meta_.threads; ++t) {
      auto in = open_stream(dir_, meta_, t);
      Record r;
      while (in->next(r)) {
        const char* what = sync_object(r.kind);
        if (!what) continue;
        const uint64_t w = sync_word(r.addr);
        const SyncObject o{w, w + sync_state_bytes(r.kind), what};
        auto it = by_word.find(w);
        if (it == by_word.end()) {
          by_word.emplace(w, o);
        } else if (it->second.what != what) {
          throw UserError(in->file() + ": thread " + std::to_string(t) + ", record " + std::to_string(in->index() - 1) + " (" +
                          describe(r) + "): the word at " + hex(w) + " is also a " + it->second.what +
                          "; a replay keeps one object's state per word");
        } else {
          it->second.hi = std::max(it->second.hi, o.hi);
        }
      }
    }
    for (const auto& [w, o] : by_word) {
      if (!sync_.empty() && sync_.back().hi > o.lo)
        throw UserError(meta_path(dir_) + ": the " + sync_.back().what + " at " + hex(sync_.back().lo) + " and the " + o.what + " at " +
                        hex(o.lo) + " overlap (a barrier's state takes 16 bytes)");
      sync_.push_back(o);
    }
  }

  // The synchronisation object whose state words [addr, addr + size) touch, or nullptr.
  const SyncObject* sync_state_at(uint64_t addr, uint64_t size) const {
    auto it = std::upper_bound(sync_.begin(), sync_.end(), addr, [](uint64_t a, const SyncObject& o) { return a < o.lo; });
    if (it != sync_.begin() && std::prev(it)->hi > addr) return &*std::prev(it);
    if (it != sync_.end() && it->lo < addr + std::max<uint64_t>(size, 1)) return &*it;
    return nullptr;
  }

  // Runs the pending record of thread t; false if it must wait.
  bool step(uint32_t t) {
    Thread& T = th_[t];
    const Record& r = T.rec;
    if (!T.began && r.kind != Kind::Begin) fail(t, "the first record of a thread must be 'begin'");
    if (is_memory(r.kind)) {
      if (r.kind != Kind::Load && !sync_.empty()) {
        if (const SyncObject* o = sync_state_at(r.addr, r.size))
          fail(t, std::string("writes into the ") + o->what + " at " + hex(o->lo) +
                      ", whose state the replay keeps in that memory; a program may use synchronisation objects only through their records");
      }
      return true;
    }
    switch (r.kind) {
      case Kind::Begin:
        if (T.began) fail(t, "a second 'begin'");
        T.began = true;
        return true;
      case Kind::End:
        if (!T.held.empty()) fail(t, "the thread ends holding lock " + hex(*T.held.begin()));
        if (T.in_roi) fail(t, "the thread ends inside its region of interest");
        {
          Record x;
          if (T.in->next(x)) {
            T.pending_index = T.in->index() - 1;
            T.rec = x;
            fail(t, "a record after 'end'");
          }
        }
        T.ended = true;
        return true;
      case Kind::Create: {
        if (r.thread >= th_.size()) fail(t, "there are only " + std::to_string(th_.size()) + " threads");
        if (r.thread == 0 || r.thread == t) fail(t, "a thread cannot create thread 0 or itself");
        if (th_[r.thread].created) fail(t, "thread " + std::to_string(r.thread) + " was already created");
        th_[r.thread].created = true;
        return true;
      }
      case Kind::Join:
        if (r.thread >= th_.size()) fail(t, "there are only " + std::to_string(th_.size()) + " threads");
        if (r.thread == t) fail(t, "a thread cannot join itself");
        return th_[r.thread].ended;
      case Kind::Acquire: {
        Lock& L = locks_[r.addr];
        if (r.seq < L.next) fail(t, "acquisition #" + std::to_string(r.seq) + " of this lock already happened");
        if (L.holder >= 0 || r.seq != L.next) return false;
        L.holder = t;
        ++L.next;
        T.held.insert(r.addr);
        return true;
      }
      case Kind::Release: {
        auto it = locks_.find(r.addr);
        if (it == locks_.end() || it->second.holder != static_cast<int64_t>(t)) fail(t, "release of a lock this thread does not hold");
        it->second.holder = -1;
        T.held.erase(r.addr);
        return true;
      }
      case Kind::Barrier: {
        Barrier& B = barriers_[r.addr];
        if (T.waiting_barrier) {  // arrived already: passes once the episode has completed
          if (B.episode <= r.seq) return false;
          T.waiting_barrier = false;
          return true;
        }
        if (r.count > th_.size()) fail(t, std::to_string(r.count) + " participants but " + std::to_string(th_.size()) + " threads");
        if (r.seq < B.episode) fail(t, "episode " + std::to_string(r.seq) + " of this barrier is already complete");
        if (r.seq > B.episode) return false;  // an earlier episode is still open
        if (B.arrived && B.participants != r.count)
          fail(t, "this episode has " + std::to_string(B.participants) + " participants, this record says " + std::to_string(r.count));
        B.participants = r.count;
        ++B.arrived;
        if (B.arrived == B.participants) {
          B.arrived = 0;
          ++B.episode;
          return true;
        }
        T.waiting_barrier = true;
        changed_ = true;
        return false;
      }
      case Kind::Post: {
        Sem& S = sems_[r.addr];
        if (r.seq != S.posts) fail(t, "post #" + std::to_string(r.seq) + ", expected #" + std::to_string(S.posts));
        ++S.posts;
        S.consumed.push_back(false);
        return true;
      }
      case Kind::Wait: {
        Sem& S = sems_[r.addr];
        if (r.seq < S.posts && S.consumed[r.seq]) fail(t, "post #" + std::to_string(r.seq) + " was already consumed");
        if (r.seq >= S.posts) return false;
        S.consumed[r.seq] = true;
        return true;
      }
      case Kind::Signal:
      case Kind::Broadcast: {
        uint64_t& n = signals_[r.addr];
        if (r.seq != n) fail(t, "wake-up #" + std::to_string(r.seq) + ", expected #" + std::to_string(n));
        ++n;
        return true;
      }
      case Kind::CondWait:
        return r.seq < signals_[r.addr];
      case Kind::RoiBegin:
        if (T.in_roi) fail(t, "region of interest begun twice");
        T.in_roi = true;
        return true;
      case Kind::RoiEnd:
        if (!T.in_roi) fail(t, "region of interest ended without a begin");
        T.in_roi = false;
        return true;
      case Kind::Dep: {
        if (r.thread >= th_.size()) fail(t, "there are only " + std::to_string(th_.size()) + " threads");
        if (r.thread == t) fail(t, "a thread cannot wait for its own record");
        const Thread& U = th_[r.thread];
        if (U.passed > r.seq) return true;
        if (U.ended)
          fail(t, "thread " + std::to_string(r.thread) + " ended after " + std::to_string(U.passed) + " records (deps not counted); there is no record #" +
                      std::to_string(r.seq));
        return false;
      }
      case Kind::Fence:
      case Kind::Alloc: return true;
      default: return true;
    }
  }

  [[noreturn]] void deadlock() const {
    for (uint32_t t = 0; t < th_.size(); ++t) {
      const Thread& T = th_[t];
      if (T.ended) continue;
      if (!T.created) {
        throw UserError(meta_path(dir_) + ": thread " + std::to_string(t) + " is never created (no 'create " + std::to_string(t) +
                        "' record can run)");
      }
      std::string why = "can never proceed";
      const Record& r = T.rec;
      if (r.kind == Kind::Acquire) {
        const Lock& L = locks_.at(r.addr);
        why += L.holder >= 0 ? " (the lock is held by thread " + std::to_string(L.holder) + ")"
                             : " (the lock's next acquisition is #" + std::to_string(L.next) + ")";
      } else if (r.kind == Kind::Join && !th_[r.thread].created) {
        why = "joins a thread that is never created";
      } else if (r.kind == Kind::Barrier) {
        why += " (the episode never gets all its participants)";
      } else if (r.kind == Kind::Dep) {
        why += " (thread " + std::to_string(r.thread) + " never passes its record #" + std::to_string(r.seq) + "; it has passed " +
               std::to_string(th_[r.thread].passed) + ")";
      }
      fail(t, why);
    }
    throw UserError(meta_path(dir_) + ": the threads deadlock");
  }

  std::string dir_;
  Meta meta_;
  std::vector<Thread> th_;
  std::vector<SyncObject> sync_;  // sorted, disjoint
  std::unordered_map<uint64_t, Lock> locks_;
  std::map<uint64_t, Barrier> barriers_;
  std::unordered_map<uint64_t, Sem> sems_;
  std::unordered_map<uint64_t, uint64_t> signals_;
  bool changed_ = false;  // a step that waits but changed state (a barrier arrival)
  ValidateResult res_;
};

}  // namespace

ValidateResult validate(const std::string& dir) { return Validator(dir).run(); }

}  // namespace mbpsim::trace
