// Tasks and their protection (thesis 3.3, 3.4, 4.3): per node, physical page frames holding
// real bytes; per task, a logical address space (page table with per-page permissions, pages
// that may alias another task's frames), an access key, a task-translation table mapping
// Ltask -> (Pnode:Ptask), the one TASKQUE, the user-level scheduler, the elastic-memory-barrier
// counters and the page-fault save area. Timing-free: MBCF/Ether and MBP2 share it.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <systemc>

#include "models/mbcf/command.h"

namespace mbpsim::mbcf {

enum Perm : uint8_t { kPermRead = 1, kPermWrite = 2, kPermRW = 3 };

// A page of a multicast pattern (4.1 MBCF_UPDATE): the child pages this page forwards to.
struct PageRef {
  uint32_t pnode = 0, ptask = 0, key = 0;
  uint32_t laddr = 0;  // page-aligned logical address in that task
};

struct Pte {
  uint32_t frame = 0;
  uint8_t perm = kPermRW;
  bool present = true;  // false: swapped out (3.4.2)
  bool valid = true;    // cleared by MBCF_INVALIDATE (a DSM copy to refetch)
  std::vector<PageRef> children;  // multicast pattern below this page
  bool in_pattern = false;        // the page belongs to a multicast pattern
  uint32_t pattern_id = 0;        // which one (4.4: multicast combines only within one)
};

struct LtaskEntry {
  uint32_t pnode = 0, ptask = 0, key = 0;
};

struct Task {
  uint32_t ptask = 0, key = 0;
  std::unordered_map<uint32_t, Pte> pages;           // by logical page number
  std::unordered_map<uint32_t, LtaskEntry> ltt;      // task-translation table
  bool has_taskque = false;
  uint32_t taskque_capacity = 0;
  std::deque<std::vector<uint8_t>> taskque;          // kernel-space queue (4.3)
  std::optional<uint32_t> uls_pc;                    // the enrolled user-level scheduler
  bool blocked = false;                              // not ready; the scheduling option wakes it
  uint64_t wakeups = 0;
  // 3.4.2: a command that faulted, and later ones for this task, wait here in order.
  bool waiting_page = false;
  std::deque<std::vector<uint8_t>> saved;
  // MBCF_FIFOe (4.1): the senders whose entries a FIFO of this task is cancelling, as
  // (FIFO structure laddr, sender Pnode, sender Ptask). Kept per sender, so that one sender's
  // RETRY restarts the FIFO for that sender only: another sender's entries already on their
  // way cannot overtake its own cancelled ones (models/verify/fifoe.pml). Kernel state: it
  // moves with the task.
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> fifoe_stopped;
  // Elastic memory barrier (4.2): request and reply counters per colour.
  uint64_t emb_requests[16] = {}, emb_replies[16] = {};
};

// Where a task has gone (3.3.3): the old node forwards what still arrives for it.
struct Moved {
  uint32_t pnode = 0, ptask = 0;
};

// Which host frame an accessor uses for a task's page. The host CPU walks the task's page
// table; a NIC that reaches host memory by DMA through a TLB of its own (the MBP2's ADMA and
// PGE) uses the TLB's entry, which is the page table's only while the OS keeps the TLB in step
// (it must invalidate an entry before it moves or reuses the frame).
class FrameMap {
 public:
  virtual ~FrameMap() = default;
  // The frame for logical page `vpage` of `t`, whose page-table entry is `pte`.
  virtual uint32_t frame(const Task& t, uint32_t vpage, const Pte& pte) const = 0;
};

// Writes into host memory that a NIC has computed but whose DMA has not yet made (the MBP2's
// ADMA, 8.3.3): while a Via names the buffer, a write goes into it instead of the frames, and a
// read sees the frames with the buffered writes over them, oldest first: the NIC's firmware
// works on its own staged copy, the host CPU sees memory as it is. The NIC `take`s the new
// writes to give them to its DMA, and `retire`s each, in order, as the DMA writes it into the
// frames. Each write is a run of bytes in one frame; a write that continues the last one not
// yet taken joins it, up to `max_bytes`.
class WriteBuffer {
 public:
  struct Write {
    uint64_t pa = 0;  // host physical address: frame * page_bytes + offset
    uint32_t ptask = 0, laddr = 0;
    std::vector<uint8_t> bytes;
  };
  explicit WriteBuffer(uint32_t max_bytes) : max_(max_bytes) {}
  // `page_start`: the bytes begin a page (they never join a write in another frame).
  void add(uint64_t pa, uint32_t ptask, uint32_t laddr, const uint8_t* p, uint32_t n, bool page_start);
  // Puts the buffered bytes that fall in [pa, pa + n) over `out` (which holds the frame's).
  void overlay(uint64_t pa, uint8_t* out, uint32_t n) const;
  // The writes not yet taken, handed to the DMA (they stay buffered until retired).
  size_t untaken() const { return writes_.size() - taken_; }
  const Write& untaken_write(size_t i) const { return writes_[taken_ + i]; }
  void take() { taken_ = join_from_ = writes_.size(); }
  void discard_untaken() { writes_.resize(taken_), join_from_ = taken_; }  // the lump that made them was undone
  // The untaken writes so far; later ones never join them (a READ runs between).
  size_t mark() { return (join_from_ = writes_.size()) - taken_; }
  // The oldest write, made by the DMA (false when none is buffered).
  bool retire(Write* w = nullptr);
  size_t size() const { return writes_.size(); }
  const Write& at(size_t i) const { return writes_[i]; }
  void clear() { writes_.clear(), taken_ = join_from_ = 0; }  // lost (the NIC's memory lost its power)

 private:
  uint32_t max_;
  std::deque<Write> writes_;
  size_t taken_ = 0, join_from_ = 0;
};

class TaskSpace final : public sc_core::sc_module {
 public:
  // The OS of a host (host<n>.os in a cluster).
  TaskSpace(sc_core::sc_module_name name, uint32_t pnode, uint32_t page_bytes);
  uint32_t pnode() const { return pnode_; }
  uint32_t page_bytes() const { return page_bytes_; }
  uint32_t page_of(uint32_t laddr) const { return laddr / page_bytes_; }

  Task& create_task(uint32_t ptask, uint32_t key);
  Task* find(uint32_t ptask);
  const Task* find(uint32_t ptask) const;
  std::unique_ptr<Task> remove(uint32_t ptask);
  void adopt(std::unique_ptr<Task> t);  // a migrated task arrives (its frames copied by the caller)
  std::map<uint32_t, std::unique_ptr<Task>>& tasks() { return tasks_; }
  const std::map<uint32_t, std::unique_ptr<Task>>& tasks() const { return tasks_; }

  // Where the frames' bytes live: `src(f)` gives frame f's page of bytes in the host's physical
  // memory (EtherSystem takes them from its host memory module through DMI). Set before the
  // first frame is allocated; without one, the space keeps its own.
  void set_frame_source(std::function<uint8_t*(uint32_t)> src);
  uint32_t frames() const { return static_cast<uint32_t>(frames_.size()); }
  uint32_t alloc_frame();  // a fresh frame, zeroed
  uint8_t* frame(uint32_t f) { return frames_[f]; }
  // The `n` bytes at host physical address `pa` (frame * page_bytes + offset), or null when
  // they are not all in one existing frame.
  uint8_t* phys_bytes(uint64_t pa, uint32_t n) const;
  // Maps `pages` logical pages from `laddr` (page aligned) to fresh frames.
  void map(Task& t, uint32_t laddr, uint32_t pages, uint8_t perm);
  // Maps `pages` of `from` starting at `from_laddr` into `to` at `to_laddr` (page aliasing).
  void alias(Task& from, uint32_t from_laddr, Task& to, uint32_t to_laddr, uint32_t pages, uint8_t perm);
  void set_present(Task& t, uint32_t laddr, bool present);

  // Checks that [laddr, laddr+n) is mapped with `perm` and present. Returns None, or the
  // violation; `fault_page` gets the first non-present page (then the result is None and the
  // return of `present_ok` false).
  ViolationCode check(const Task& t, uint32_t laddr, uint32_t n, uint8_t perm, bool* present_ok = nullptr,
                      uint32_t* fault_page = nullptr) const;
  // Copies between a task's logical space and a host buffer; the range must have passed check().
  void read(const Task& t, uint32_t laddr, uint8_t* out, uint32_t n) const;
  void write(Task& t, uint32_t laddr, const uint8_t* in, uint32_t n);
  uint32_t load32(const Task& t, uint32_t laddr) const;
  void store32(Task& t, uint32_t laddr, uint32_t v);

  // Accesses through read/write/load32/store32 use `m`'s frames while a Via is in scope
  // (a NIC's DMA); otherwise the page table's (the host CPU). With a write buffer `w`, writes
  // go into it and reads see it (see WriteBuffer).
  class Via {
   public:
    Via(TaskSpace& ts, const FrameMap* m, WriteBuffer* w = nullptr) : ts_(ts), old_(ts.map_), old_w_(ts.wb_) {
      ts.map_ = m;
      ts.wb_ = w;
    }
    ~Via() {
      ts_.map_ = old_;
      ts_.wb_ = old_w_;
    }
    Via(const Via&) = delete;
    Via& operator=(const Via&) = delete;

   private:
    TaskSpace& ts_;
    const FrameMap* old_;
    WriteBuffer* old_w_;
  };
  // Drops the writes buffered since the NIC last took them, if a Via names a write buffer:
  // true then (an undone lump needs no restore).
  bool discard_buffered();
  // The writes buffered and not yet taken (0 without a write buffer); later writes start anew.
  uint32_t buffer_mark() { return wb_ ? static_cast<uint32_t>(wb_->mark()) : 0; }

  void set_moved(uint32_t ptask, Moved m) { moved_[ptask] = m; }
  const Moved* moved(uint32_t ptask) const;

 private:
  uint64_t phys(const Task& t, uint32_t laddr) const;  // frame * page_bytes + offset
  uint32_t pnode_, page_bytes_;
  std::vector<uint8_t*> frames_;
  std::vector<std::unique_ptr<uint8_t[]>> owned_;  // without a frame source
  std::function<uint8_t*(uint32_t)> source_;
  std::map<uint32_t, std::unique_ptr<Task>> tasks_;
  std::unordered_map<uint32_t, Moved> moved_;
  const FrameMap* map_ = nullptr;
  WriteBuffer* wb_ = nullptr;
};

// Structures the commands act on, kept in the target task's memory as little-endian words
// (so a user program reads them with plain loads).
//  FIFO (Fig. 4.1): +0 top, +4 head, +8 tail, +12 end (buffer [top, end)), +16 flags (bit 0:
//    FIFOe stopped). An entry is a u32 length, then the bytes, padded to 4; a length of
//    0xFFFFFFFF means "wrapped: continue at top". head == tail is empty.
//  SIGNAL (Fig. 4.7): +0 invocation type, +4 storage type, +8 condition, +12 running count,
//    +16 DSP entry, +20 buffer (MEMW, MEMW_OFFSET), +24 buffer size, +28 FIFO structure (QUEW).
//    The record stored for a packet: u32 source Pnode, u32 source Ptask, u32 length, data
//    (MEMW_SSP stores the data alone).
namespace layout {
constexpr uint32_t kFifoBytes = 20, kSignalBytes = 32;
constexpr uint32_t kWrapMark = 0xFFFFFFFFu;
}  // namespace layout

}  // namespace mbpsim::mbcf
