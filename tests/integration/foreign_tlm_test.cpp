// TLM-2.0 at the host boundary: a memory written by a user in plain TLM-2.0 (no mbpsim header
// in it) is bound as the physical memory of MBP2 hosts and of conventional hosts. The host's CPU
// takes its frames through DMI; the NIC's DMA (the MBP2's ADMA through the BIU's initiator
// socket, the conventional NIC's own socket) reaches it with b_transport, and the delay the
// memory annotates is paid.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "models/core/module_tree.h"
#include "models/mbcf/conventional_nic.h"
#include "models/mbp2/mbp2_cards.h"
#include "models/systems/assembly.h"
#include "tests/integration/cluster_tasks.h"
#include "tests/user_tlm_memory.h"

namespace {

using namespace mbpsim;
using namespace mbpsim::mbcf;

struct Cluster {
  Stats stats;
  Root root;  // built in it as the runner builds: statistics under system.*
  Calendar cal{"cal"};
  EtherSysConfig ec;
  systems::Cluster k;
  EtherSystem* sys = nullptr;
  explicit Cluster(uint32_t nodes, const mbp2::Mbp2Config& mc = {}) : Cluster(nodes, &mc) {}
  // nullptr: the conventional NICs of MBCF/Ether.
  Cluster(uint32_t nodes, const mbp2::Mbp2Config* mc) {
    Within in(root);
    ec.nodes = nodes;
    ec.ether.medium = net::EtherConfig::Medium::Direct;
    ec.ether.rate_mbps = 1000;
    k = systems::build_cluster(cal, ec, mc, stats, 1);
    sys = k.sys.get();
  }
  void tasks() {
    test::one_task_per_node(*sys, 4);
  }
  Task& task(uint32_t n) { return *sys->space(n).find(1); }
  // Where the task's byte at `laddr` lies in host physical memory.
  uint64_t phys(uint32_t n, uint32_t laddr) {
    const uint32_t pb = ec.page_bytes;
    return static_cast<uint64_t>(task(n).pages.at(laddr / pb).frame) * pb + laddr % pb;
  }
  Command write(uint32_t laddr, uint32_t len, uint8_t seed) {
    Command c;
    c.cmd = Cmd::Write;
    c.laddr = laddr;
    c.length = len;
    for (uint32_t i = 0; i < len; ++i) c.data.push_back(static_cast<uint8_t>(seed + 3 * i));
    return c;
  }
};

// Binds the memories, in order, as the physical memories of hosts 0, 1, ...
template <class... M>
void use_memories(EtherSystem& sys, M&... m) {
  uint32_t n = 0;
  (sys.use_host_memory(n++, m.socket), ...);
}

TEST(ForeignTlm, AUsersMemoryIsTheHostsMemoryForTheCpuAndForTheNicsDma) {
  Cluster c(2);
  UserMemory m0("user_mem0", 1 << 20, sc_core::SC_ZERO_TIME), m1("user_mem1", 1 << 20, sc_core::SC_ZERO_TIME);
  use_memories(*c.sys, m0, m1);
  c.tasks();
  // The sockets sit in the module tree: the BIU's DMA master in its NIC, the host's own memory.
  EXPECT_NE(sc_core::sc_find_object("system.host1.nic.biu.dma_socket"), nullptr);
  EXPECT_NE(sc_core::sc_find_object("system.host1.memory.socket"), nullptr);
  // The sender's payload, stored by its CPU (through DMI), and sent from its memory.
  const Command w = c.write(0x10100, 512, 5);
  c.sys->space(0).write(c.task(0), 0x10000, w.data.data(), 512);
  EXPECT_EQ(m0.bytes[c.phys(0, 0x10000) + 1], 8u);  // the store is in the user's array
  bool returned = false;
  ASSERT_TRUE(c.sys->syscall(0, 1, Request{1, {w}, 0x10000}, [&] { returned = true; }));
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_MS));
  ASSERT_TRUE(returned);
  // The payload came from the sender's memory, read by its PGE through the BIU's socket (the
  // send structure and the payload); the receiver's ADMA wrote it through the socket.
  EXPECT_GE(m0.reads, 2u);
  EXPECT_GT(m1.writes, 0u);
  const uint64_t pa = c.phys(1, 0x10100);
  for (uint32_t i = 0; i < 512; ++i) {
    ASSERT_EQ(m1.bytes[pa + i], static_cast<uint8_t>(5 + 3 * i)) << i;
    uint8_t b = 0;
    c.sys->space(1).read(c.task(1), 0x10100 + i, &b, 1);  // the CPU's view is the same bytes
    ASSERT_EQ(b, m1.bytes[pa + i]);
  }
}

// Two receivers, one behind a memory that annotates 40 us per access. Five writes go to each;
// the receiving ADMA moves one descriptor at a time and takes the next only when the last is
// done, so the slow receiver's fifth write lands at least 4 x 40 us after the fast one's
// (the data of one access is in memory when b_transport returns, as in any LT model; the
// initiator pays the delay before it goes on).
TEST(ForeignTlm, TheDelayAMemoryAnnotatesIsPaidByTheDma) {
  Cluster c(3);
  UserMemory fast("fast", 1 << 20, sc_core::SC_ZERO_TIME), slow("slow", 1 << 20, sc_core::sc_time(40, sc_core::SC_US));
  c.sys->use_host_memory(1, fast.socket);
  c.sys->use_host_memory(2, slow.socket);
  c.tasks();
  uint64_t seen[3] = {0, 0, 0};
  for (uint32_t n : {1u, 2u})
    c.sys->poll(n, [&c, n] { uint8_t b = 0; c.sys->space(n).read(c.task(n), 0x10200 + 4 * 4, &b, 1); return b == 5; },
                [&seen, n] { seen[n] = sc_core::sc_time_stamp().value(); });
  for (uint32_t k = 0; k < 5; ++k)
    for (uint32_t to : {1u, 2u}) {
      Command w = c.write(0x10200 + 4 * k, 4, 0);
      w.data.assign(4, static_cast<uint8_t>(k + 1));
      ASSERT_TRUE(c.sys->syscall(0, 1, Request{to, {w}}, [] {}));
    }
  sc_core::sc_start(sc_core::sc_time(20, sc_core::SC_MS));
  ASSERT_GT(seen[1], 0u);
  ASSERT_GT(seen[2], 0u);
  EXPECT_GE(seen[2], seen[1] + 160'000'000u) << seen[1] << " vs " << seen[2];  // ps
  EXPECT_LT(seen[2], seen[1] + 2'000'000'000u) << seen[1] << " vs " << seen[2];
  EXPECT_GE(slow.writes, 5u);
}

TEST(ForeignTlm, AMemoryWithoutDmiIsRefusedNamingTheNodeAndFrame) {
  Cluster c(2);
  UserMemory m("nodmi", 1 << 20, sc_core::SC_ZERO_TIME);
  m.grant_dmi = false;
  c.sys->use_host_memory(1, m.socket);
  Task& t = c.sys->create_task(1, 1, 7);
  try {
    c.sys->space(1).map(t, 0x10000, 1, kPermRW);
    FAIL() << "mapped a frame of a memory that grants no DMI";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("node 1: host memory grants no read/write DMI over frame 0"), std::string::npos) << e.what();
  }
  // And a memory cannot be changed under frames already given out.
  Task& t0 = c.sys->create_task(0, 1, 8);
  c.sys->space(0).map(t0, 0x10000, 1, kPermRW);
  EXPECT_THROW(c.sys->use_host_memory(0, m.socket), std::logic_error);
}

// ---------------------------------------------------------------- the conventional NIC

// A conventional cluster (the MBCF kernel behind the conventional NIC), on full-duplex links
// that no two pairs share, as the runner builds it.
struct Conventional {
  Stats stats;
  Root root;
  Calendar cal{"cal"};
  EtherSysConfig ec;
  std::unique_ptr<EtherSystem> sys;
  explicit Conventional(uint32_t nodes) {
    Within in(root);
    ec.nodes = nodes;
    ec.ether.medium = net::EtherConfig::Medium::Direct;
    sys = std::make_unique<EtherSystem>(cal, ec, stats, 1);
  }
  ConventionalNic& nic(uint32_t n) {
    auto* p = dynamic_cast<ConventionalNic*>(sc_core::sc_find_object(("system.host" + std::to_string(n) + ".nic").c_str()));
    if (!p) throw std::logic_error("no conventional NIC on host " + std::to_string(n));
    return *p;
  }
  uint64_t counter(const std::string& path) const { return stats.counter_value(path).value(); }
};

// A user's memory that tampers with what a DMA master moves (zeroes the bytes read or written)
// or refuses it: to show that what the NIC sends and what the stack receives are the bytes in
// memory, not a copy carried beside it.
struct TamperingMemory : sc_core::sc_module {
  tlm_utils::simple_target_socket<TamperingMemory> socket{"socket"};
  std::vector<unsigned char> bytes;
  bool zero_reads = false, zero_writes = false, refuse_writes = false;
  unsigned long long reads = 0, writes = 0;
  TamperingMemory(sc_core::sc_module_name n, size_t size) : sc_core::sc_module(n), bytes(size) {
    socket.register_b_transport(this, &TamperingMemory::b_transport);
    socket.register_get_direct_mem_ptr(this, &TamperingMemory::get_dmi);
  }
  void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time&) {
    const unsigned long long a = t.get_address();
    const unsigned n = t.get_data_length();
    if (a + n > bytes.size() || (t.is_write() && refuse_writes)) return t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    if (t.is_read()) std::memcpy(t.get_data_ptr(), &bytes[a], n), ++reads;
    if (t.is_write()) std::memcpy(&bytes[a], t.get_data_ptr(), n), ++writes;
    if ((t.is_read() && zero_reads) || (t.is_write() && zero_writes)) {
      std::memset(&bytes[a], 0, n);
      std::memset(t.get_data_ptr(), 0, n);
    }
    t.set_response_status(tlm::TLM_OK_RESPONSE);
  }
  bool get_dmi(tlm::tlm_generic_payload&, tlm::tlm_dmi& d) {
    d.set_dmi_ptr(bytes.data());
    d.set_start_address(0);
    d.set_end_address(bytes.size() - 1);
    d.allow_read_write();
    return true;
  }
};

TEST(ForeignTlm, AConventionalNicMovesEveryFrameThroughTheHostsMemory) {
  Conventional c(2);
  UserMemory m0("user_mem0", 1 << 20, sc_core::SC_ZERO_TIME), m1("user_mem1", 1 << 20, sc_core::SC_ZERO_TIME);
  use_memories(*c.sys, m0, m1);
  test::one_task_per_node(*c.sys, 4);
  EXPECT_NE(sc_core::sc_find_object("system.host0.nic.dma"), nullptr);  // the NIC's DMA master
  test::stream_writes(*c.sys, 0, 1, 50, 700);
  sc_core::sc_start(sc_core::sc_time(50, sc_core::SC_MS));
  ASSERT_TRUE(c.sys->failure().empty()) << c.sys->failure();
  for (uint32_t i = 0; i < 50; ++i) ASSERT_EQ(test::task_word(*c.sys, 1, 0x10000 + 4 * i), 700 + i) << i;
  // Every frame a NIC sent it read from its host's memory, and every frame it received it
  // wrote there: 50 requests one way, their acknowledgements the other, each a DMA transfer of
  // the NIC, and nothing else reached the memories by b_transport.
  const uint64_t sent = c.counter("system.mbcf.packets_sent"), received = c.counter("system.mbcf.packets_received");
  EXPECT_GE(sent, 50u);
  EXPECT_EQ(m0.reads + m1.reads, sent);
  EXPECT_EQ(m0.writes + m1.writes, received);
  EXPECT_EQ(c.nic(0).dma_transports() + c.nic(1).dma_transports(), sent + received);
  // The driver's buffers are in the host's memory (frames the OS gave it), all free again.
  ASSERT_GT(c.nic(1).buffers(), 0u);
  EXPECT_EQ(c.nic(1).buffers_free(), c.nic(1).buffers());
  EXPECT_LT(c.nic(1).buffer_pa(0) + ConventionalNic::kBufBytes, m1.bytes.size());
}

TEST(ForeignTlm, WhatAConventionalStackReceivesIsWhatTheNicsDmaWroteIntoMemory) {
  Conventional c(2);
  TamperingMemory m0("m0", 1 << 20), m1("m1", 1 << 20);
  m1.zero_writes = true;  // every frame the receiver's NIC writes into memory arrives as zeroes
  use_memories(*c.sys, m0, m1);
  test::one_task_per_node(*c.sys, 4);
  test::stream_writes(*c.sys, 0, 1, 3, 900);
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_MS));
  EXPECT_GT(m1.writes, 0u);
  EXPECT_EQ(c.counter("system.mbcf.malformed"), m1.writes);  // the stack read the zeroes
  EXPECT_EQ(test::task_word(*c.sys, 1, 0x10000), 0u);        // so nothing landed
}

TEST(ForeignTlm, WhatAConventionalNicSendsIsWhatItsDmaReadFromMemory) {
  Conventional c(2);
  TamperingMemory m0("m0", 1 << 20), m1("m1", 1 << 20);
  m0.zero_reads = true;  // the sender's NIC reads zeroes where the stack put the frame
  use_memories(*c.sys, m0, m1);
  test::one_task_per_node(*c.sys, 4);
  test::stream_writes(*c.sys, 0, 1, 3, 900);
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_MS));
  EXPECT_GT(m0.reads, 0u);
  EXPECT_EQ(c.counter("system.mbcf.malformed"), m0.reads);
  EXPECT_EQ(test::task_word(*c.sys, 1, 0x10000), 0u);
}

TEST(ForeignTlm, AMemoryThatRefusesAConventionalNicsDmaFailsTheRunNamingNodeAndAddress) {
  Conventional c(2);
  TamperingMemory m0("m0", 1 << 20), m1("m1", 1 << 20);
  m1.refuse_writes = true;
  use_memories(*c.sys, m0, m1);
  test::one_task_per_node(*c.sys, 4);
  test::stream_writes(*c.sys, 0, 1, 1, 900);
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_MS));
  EXPECT_NE(c.sys->failure().find("node 1: host memory refused the NIC's DMA write of [0x"), std::string::npos) << c.sys->failure();
  EXPECT_EQ(test::task_word(*c.sys, 1, 0x10000), 0u);
}

// The MBP2's PGE gathers a request (its send structure and payload) through the BIU's socket:
// a sender's memory that zeroes what a DMA master reads leaves the PGE an image of zeroes,
// which the PME refuses, and nothing lands.
TEST(ForeignTlm, WhatTheMbp2PgeGathersIsWhatItReadThroughTheSocket) {
  Cluster c(2);
  TamperingMemory m0("m0", 1 << 20), m1("m1", 1 << 20);
  m0.zero_reads = true;
  use_memories(*c.sys, m0, m1);
  c.tasks();
  const Command w = c.write(0x10100, 64, 5);
  c.sys->space(0).write(c.task(0), 0x10000, w.data.data(), 64);
  ASSERT_TRUE(c.sys->syscall(0, 1, Request{1, {w}, 0x10000}, [] {}));
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_MS));
  EXPECT_GT(m0.reads, 0u);
  EXPECT_EQ(c.stats.counter_value("system.host0.nic.bad_requests").value(), 1u);
  uint8_t b = 0xff;
  c.sys->space(1).read(c.task(1), 0x10100 + 1, &b, 1);
  EXPECT_EQ(b, 0u);  // not 8: the write never came
}

// The MBP2 reaches a task's send area only through the BIU's socket: the PME's look at a
// structure's header when it takes the doorbell, and the PGE's write of the task's fetched
// count. A sender's memory that zeroes what is written through its socket leaves the count at
// 0 in the host's view (through DMI, the same bytes), though the request went out; one that
// refuses the write fails the run, naming the node and the task.
// Node 0's task writes 77 to node 1's over MBP2s whose host memories are `m0` and `m1`.
void one_word_write(Cluster& c, TamperingMemory& m0, TamperingMemory& m1) {
  use_memories(*c.sys, m0, m1);
  c.tasks();
  ASSERT_TRUE(c.sys->syscall(0, 1, test::word_write(1, 0x10000, 77), [] {}));
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_MS));
}

TEST(ForeignTlm, TheMbp2WritesTheFetchedCountThroughItsSocket) {
  Cluster c(2);
  TamperingMemory m0("m0", 1 << 20), m1("m1", 1 << 20);
  m0.zero_writes = true;
  one_word_write(c, m0, m1);
  EXPECT_EQ(c.sys->failure(), "");
  EXPECT_EQ(test::task_word(*c.sys, 1, 0x10000), 77u);  // it went
  EXPECT_EQ(c.stats.counter_value("system.host0.nic.pge.descriptors").value(), 1u);
  EXPECT_GE(m0.writes, 1u);
  EXPECT_EQ(c.k.mbp2->nic(0).fetched(1), 0u);  // the count the NIC wrote, as the memory kept it
}

TEST(ForeignTlm, AMemoryThatRefusesTheMbp2sCountWriteFailsTheRunNamingNodeAndTask) {
  Cluster c(2);
  TamperingMemory m0("m0", 1 << 20), m1("m1", 1 << 20);
  m0.refuse_writes = true;
  one_word_write(c, m0, m1);
  EXPECT_NE(c.sys->failure().find("node 0: host memory refused the NIC's write of task 1's fetched count"), std::string::npos)
      << c.sys->failure();
}

// Two MBP2 pairs, 0 -> 1 and 2 -> 3, each sending one write at the same instant; node 2's
// memory annotates 40 us per access. Its PGE pays that on each of its reads (the engine hands
// the descriptor back that much later), so the write lands exactly 40 us x those reads later.
TEST(ForeignTlm, TheDelayAMemoryAnnotatesIsPaidByTheMbp2PgesReads) {
  Cluster c(4);
  std::vector<std::unique_ptr<UserMemory>> m;
  for (uint32_t n = 0; n < 4; ++n) {
    m.push_back(std::make_unique<UserMemory>(("mem" + std::to_string(n)).c_str(), 1 << 20,
                                             n == 2 ? sc_core::sc_time(40, sc_core::SC_US) : sc_core::SC_ZERO_TIME));
    c.sys->use_host_memory(n, m.back()->socket);
  }
  c.tasks();
  uint64_t seen[4] = {};
  for (uint32_t n : {1u, 3u})
    c.sys->poll(n, [&c, n] { return test::task_word(*c.sys, n, 0x10000) == 77; }, [&seen, n] { seen[n] = sc_core::sc_time_stamp().value(); });
  for (uint32_t n : {0u, 2u}) ASSERT_TRUE(c.sys->syscall(n, 1, test::word_write(n + 1, 0x10000, 77), [] {}));
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_MS));
  ASSERT_GT(seen[1], 0u);
  EXPECT_GE(m[2]->reads, 2u);  // the send structure's header and its commands
  EXPECT_EQ(seen[3], seen[1] + 40'000'000u * m[2]->reads) << m[2]->reads;
}

// A frame longer than the driver's buffers is neither sent nor received; Ethernet's longest is.
TEST(ForeignTlm, AConventionalNicRefusesAFrameLongerThanItsBuffers) {
  Conventional c(2);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);  // elaborated: the NIC's DMA socket is bound
  int sent_long = -1, sent_max = -1, rx_long = -1;
  c.sys->nic(0).transmit(1, Nic::Frame(ConventionalNic::kBufBytes + 1, 0x5a), [&](bool s) { sent_long = s; });
  EXPECT_EQ(sent_long, 0);  // at once: nothing went on the wire
  Nic::Frame max(1514, 0);
  max[12] = 0x88, max[13] = 0xb6;  // a type no stack takes
  c.sys->nic(0).transmit(1, std::move(max), [&](bool s) { sent_max = s; });
  c.sys->nic(1).receive(Nic::Frame(ConventionalNic::kBufBytes + 1, 0), [&](Nic::Rx* r) { rx_long = r != nullptr; });
  EXPECT_EQ(rx_long, 0);
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
  EXPECT_EQ(sent_max, 1);
  EXPECT_EQ(c.counter("system.mbcf.malformed"), 1u);  // it arrived, whole, at node 1's routine
}

// Three pairs on links no two share, each sending one write at the same time: the second pair's
// receiver has a memory that annotates 40 us per access, the third pair's sender. Each lands
// exactly 40 us after the first pair's: the one DMA transfer of the frame on that side pays it.
TEST(ForeignTlm, TheDelayAMemoryAnnotatesIsPaidByTheConventionalNicsDma) {
  Conventional c(6);
  const sc_core::sc_time slow(40, sc_core::SC_US);
  std::vector<std::unique_ptr<UserMemory>> m;
  for (uint32_t n = 0; n < 6; ++n) {
    m.push_back(std::make_unique<UserMemory>(("mem" + std::to_string(n)).c_str(), 1 << 20, n == 3 || n == 4 ? slow : sc_core::SC_ZERO_TIME));
    c.sys->use_host_memory(n, m.back()->socket);
  }
  test::one_task_per_node(*c.sys, 4);
  uint64_t seen[6] = {};
  for (uint32_t n : {1u, 3u, 5u})
    c.sys->poll(n, [&c, n] { return test::task_word(*c.sys, n, 0x10000) == 77; }, [&seen, n] { seen[n] = sc_core::sc_time_stamp().value(); });
  for (uint32_t n : {0u, 2u, 4u}) ASSERT_TRUE(c.sys->syscall(n, 1, test::word_write(n + 1, 0x10000, 77), [] {}));
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_MS));
  ASSERT_GT(seen[1], 0u);
  EXPECT_EQ(seen[3], seen[1] + 40'000'000u);  // ps: the receiver's DMA write
  EXPECT_EQ(seen[5], seen[1] + 40'000'000u);  // the sender's DMA read
}


// A bus master written by a user in plain TLM-2.0 (no mbpsim header): an SC_THREAD that makes
// its transfers one after the other through b_transport, each at its time or when the one
// before has finished, and keeps what each was answered and when it finished.
struct UserPioMaster : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<UserPioMaster> socket;
  struct Transfer {
    uint64_t addr;
    std::vector<uint8_t> data;
    tlm::tlm_command cmd = tlm::TLM_WRITE_COMMAND;
    sc_core::sc_time at = sc_core::SC_ZERO_TIME;
    tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
    sc_core::sc_time issued, done;
  };
  std::vector<Transfer> transfers;
  SC_HAS_PROCESS(UserPioMaster);
  explicit UserPioMaster(sc_core::sc_module_name n) : sc_core::sc_module(n), socket("socket") { SC_THREAD(run); }
  void run() {
    for (Transfer& t : transfers) {
      if (t.at > sc_core::sc_time_stamp()) wait(t.at - sc_core::sc_time_stamp());
      tlm::tlm_generic_payload gp;
      gp.set_command(t.cmd);
      gp.set_address(t.addr);
      gp.set_data_ptr(t.data.data());
      gp.set_data_length(static_cast<unsigned>(t.data.size()));
      gp.set_streaming_width(static_cast<unsigned>(t.data.size()));
      sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
      t.issued = sc_core::sc_time_stamp();
      socket->b_transport(gp, delay);
      wait(delay);
      t.status = gp.get_response_status();
      t.done = sc_core::sc_time_stamp();
    }
  }
};

std::vector<uint8_t> be_word(uint32_t v) {
  return {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
}

// Task 1 of node 0's send structure in entry `e`: a one-word WRITE of `v` at `laddr` of node 1's
// task, as the user library writes it.
void post_word_write(Cluster& c, uint32_t e, uint32_t laddr, uint32_t v) {
  mbcf::Packet p;
  p.cmds = test::word_write(1, laddr, v).cmds;
  using mbp2::Mbp2Nic;
  c.k.mbp2->nic(0).send_area_write(1, Mbp2Nic::kSendAreaHeader + e * Mbp2Nic::kSendEntryBytes, Mbp2Nic::mbcf_structure(1, p, kNoAddr));
}

// The MBP2's doorbell register is a TLM-2.0 target on the host bus (the BIU's `pio_socket`):
// a user's bus master, bound beside the host CPU, stores an entry's number through a task's
// alias, and the card sends what the task wrote there. The alias names the task; a store
// through an alias no task has is taken by the bus and ignored by the ULI; a read, a burst and
// an address outside the aliases get the base protocol's errors.
TEST(ForeignTlm, AUsersBusMasterRingsTheMbp2DoorbellThroughItsPioSocket) {
  Cluster c(2);
  c.tasks();
  mbp2::Mbp2Nic& nic = c.k.mbp2->nic(0);
  post_word_write(c, 0, 0x10000, 77);
  UserPioMaster m("user_master");
  m.socket.bind(nic.bus().pio_socket);
  const uint64_t own = nic.doorbell_offset(nic.alias_of(1)), pb = c.ec.page_bytes;
  const sc_core::sc_time us(1, sc_core::SC_US);
  using T = UserPioMaster::Transfer;
  m.transfers = {T{own, be_word(nic.doorbell_value(mbp2::Mbp2Nic::kSendMbcf, 0)), tlm::TLM_WRITE_COMMAND, us},
                 T{nic.doorbell_offset(900), be_word(nic.doorbell_value(mbp2::Mbp2Nic::kSendMbcf, 1)), tlm::TLM_WRITE_COMMAND, 200 * us},
                 T{own, be_word(0), tlm::TLM_READ_COMMAND},
                 T{own, std::vector<uint8_t>(8, 0)},
                 T{own + 4, be_word(0)},
                 T{1024 * pb, be_word(0)}};
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_MS));
  EXPECT_EQ(c.sys->failure(), "");
  EXPECT_EQ(test::task_word(*c.sys, 1, 0x10000), 77u);
  ASSERT_EQ(m.transfers[0].status, tlm::TLM_OK_RESPONSE);
  // The store's time is the bus's, annotated: a programmed write of the SBus.
  const uint64_t pio_ps = nic.bus().cycles_ps(nic.bus().config().pio_cycles);
  EXPECT_EQ(m.transfers[0].done.value() - m.transfers[0].issued.value(), pio_ps);
  EXPECT_EQ(m.transfers[1].status, tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(m.transfers[2].status, tlm::TLM_COMMAND_ERROR_RESPONSE);
  EXPECT_EQ(m.transfers[3].status, tlm::TLM_BURST_ERROR_RESPONSE);
  EXPECT_EQ(m.transfers[4].status, tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(m.transfers[5].status, tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(c.stats.counter_value("system.host0.nic.host_requests").value(), 2u);
  EXPECT_EQ(c.stats.counter_value("system.host0.nic.uli.doorbells").value(), 1u);
  EXPECT_EQ(c.stats.counter_value("system.host0.nic.uli.rejected").value(), 1u);
  EXPECT_EQ(c.stats.counter_value("system.host0.nic.rejected_requests").value(), 1u);
  EXPECT_EQ(c.stats.counter_value("system.host0.nic.pge.descriptors").value(), 1u);
  EXPECT_EQ(c.stats.counter_value("system.mbcf.packets_sent").value() > 0, true);
  EXPECT_EQ(nic.fetched(1), 1u);  // the PGE's count, as the task polls it
}

// With one request slot, the user's second store finds the slot taken by the first request:
// the bus retries it and b_transport returns only when that request has left EM, then the
// second goes too. Both writes land, the first before the second.
TEST(ForeignTlm, AUsersStoreToABusyMbp2DoorbellWaitsInsideBTransport) {
  mbp2::Mbp2Config mc;
  mc.request_slots = 1;
  Cluster c(2, mc);
  c.tasks();
  mbp2::Mbp2Nic& nic = c.k.mbp2->nic(0);
  post_word_write(c, 0, 0x10000, 5);
  post_word_write(c, 1, 0x10004, 6);
  UserPioMaster m("user_master");
  m.socket.bind(nic.bus().pio_socket);
  const uint64_t own = nic.doorbell_offset(nic.alias_of(1));
  using T = UserPioMaster::Transfer;
  m.transfers = {T{own, be_word(nic.doorbell_value(mbp2::Mbp2Nic::kSendMbcf, 0))}, T{own, be_word(nic.doorbell_value(mbp2::Mbp2Nic::kSendMbcf, 1))}};
  uint32_t first_when_second = 0;  // the first write's word when the second's has landed
  c.sys->poll(1, [&] { return test::task_word(*c.sys, 1, 0x10004) == 6; },
              [&] { first_when_second = test::task_word(*c.sys, 1, 0x10000); });
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_MS));
  EXPECT_EQ(c.sys->failure(), "");
  ASSERT_EQ(m.transfers[1].status, tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(c.stats.counter_value("system.host0.nic.doorbell_slot_waits").value(), 1u);
  const uint64_t pio_ps = nic.bus().cycles_ps(nic.bus().config().pio_cycles);
  // Issued as the first finished, it waited for the PGE's fetch and the PME's header build.
  EXPECT_EQ(m.transfers[1].issued, m.transfers[0].done);
  EXPECT_GT(m.transfers[1].done.value() - m.transfers[1].issued.value(), 10 * pio_ps);
  EXPECT_EQ(first_when_second, 5u);
  EXPECT_EQ(nic.fetched(1), 2u);
}

// The conventional NIC's command and status register is a TLM-2.0 target on the host bus too
// (`pio_socket`): the driver demands transmission by storing CSR0's TDMD through the host
// CPU's `pio` socket, once per frame it posts, and a user's bus master bound beside the CPU may
// store there as well: a demand with nothing posted sends nothing. A read, a burst and another
// register get the base protocol's errors.
TEST(ForeignTlm, AUsersBusMasterStoresIntoTheConventionalNicsCsrBesideTheDriver) {
  Cluster c(2, nullptr);
  c.tasks();
  auto& nic = dynamic_cast<ConventionalNic&>(c.sys->nic(0));
  UserPioMaster m("user_master");
  m.socket.bind(nic.pio_socket);
  using T = UserPioMaster::Transfer;
  const sc_core::sc_time us(1, sc_core::SC_US);
  m.transfers = {T{ConventionalNic::kCsr0, be_word(ConventionalNic::kTdmd), tlm::TLM_WRITE_COMMAND, us},
                 T{ConventionalNic::kCsr0, be_word(0), tlm::TLM_READ_COMMAND},
                 T{ConventionalNic::kCsr0, std::vector<uint8_t>(8, 0)},
                 T{4, be_word(ConventionalNic::kTdmd)}};
  sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_US));
  EXPECT_EQ(m.transfers[0].status, tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(m.transfers[0].done, m.transfers[0].issued);  // posted: taken at once
  EXPECT_EQ(m.transfers[1].status, tlm::TLM_COMMAND_ERROR_RESPONSE);
  EXPECT_EQ(m.transfers[2].status, tlm::TLM_BURST_ERROR_RESPONSE);
  EXPECT_EQ(m.transfers[3].status, tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(c.stats.counter_value("system.host0.nic.tx_demands").value(), 1u);
  EXPECT_EQ(c.stats.counter_value("system.host0.nic.csr_errors").value(), 3u);
  EXPECT_EQ(c.stats.counter_value("system.ether.frames").value(), 0u);  // nothing was posted
  // The driver's own demands: one per frame it sends, and the frames arrive.
  test::stream_writes(*c.sys, 0, 1, 5, 40);
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_MS));
  EXPECT_EQ(c.sys->failure(), "");
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(test::task_word(*c.sys, 1, 0x10000 + 4 * i), 40u + i);
  const uint64_t frames0 = c.stats.counter_value("system.mbcf.packets_sent").value();
  EXPECT_GE(frames0, 5u);
  EXPECT_EQ(c.stats.counter_value("system.host0.nic.tx_demands").value() + c.stats.counter_value("system.host1.nic.tx_demands").value(),
            1u + frames0);
}

}  // namespace
