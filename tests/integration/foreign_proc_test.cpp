// TLM-2.0 at an MBP processor's memory port: a core model written by a user in plain TLM-2.0
// (UserCore below: an SC_THREAD with an initiator socket, no mbpsim header) drives processors
// of the machine through System::processor_port while the other processors run the
// workload. Its loads and stores go through the processor's caches and the machine's
// coherence: a flag handed across two nodes carries the data written before it, hits cost what
// the processor's L1 costs, and what the port cannot do is answered with the base protocol's
// error responses.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "models/mbp/system.h"
#include "sim/runner.h"
#include "tests/mbp_harness.h"
#include "tests/test_util.h"

namespace mbpsim {
namespace {

// The user's core: runs `program` in its thread; every access is one blocking b_transport.
struct UserCore : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<UserCore> socket;
  std::function<void(UserCore&)> program;
  bool finished = false;
  SC_HAS_PROCESS(UserCore);
  UserCore(sc_core::sc_module_name n, std::function<void(UserCore&)> p) : sc_core::sc_module(n), socket("socket"), program(std::move(p)) {
    SC_THREAD(run);
  }
  void run() {
    program(*this);
    finished = true;
  }
  tlm::tlm_response_status access(tlm::tlm_command cmd, uint64_t addr, uint8_t* data, uint32_t len, uint8_t* byte_enable = nullptr) {
    tlm::tlm_generic_payload gp;
    gp.set_command(cmd);
    gp.set_address(addr);
    gp.set_data_ptr(data);
    gp.set_data_length(len);
    gp.set_streaming_width(len);
    gp.set_byte_enable_ptr(byte_enable);
    gp.set_byte_enable_length(byte_enable ? len : 0);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    socket->b_transport(gp, delay);
    if (delay != sc_core::SC_ZERO_TIME) wait(delay);
    return gp.get_response_status();
  }
  uint32_t load(uint64_t a) {
    uint32_t v = 0;
    EXPECT_EQ(access(tlm::TLM_READ_COMMAND, a, reinterpret_cast<uint8_t*>(&v), 4), tlm::TLM_OK_RESPONSE);
    return v;
  }
  void store(uint64_t a, uint32_t v) {
    EXPECT_EQ(access(tlm::TLM_WRITE_COMMAND, a, reinterpret_cast<uint8_t*>(&v), 4), tlm::TLM_OK_RESPONSE);
  }
  void fence() { EXPECT_EQ(access(tlm::TLM_IGNORE_COMMAND, 0, nullptr, 0), tlm::TLM_OK_RESPONSE); }
};

uint64_t now_ps() { return sc_core::sc_time_stamp().value(); }

// Far from the workload's shared region (from 0) and its private data (from 0x40000000).
constexpr uint64_t kData = 0x10000000, kFlag = 0x10001000, kAck = 0x10002000;

// Two user cores on two nodes, amid the sharing workload on every other processor, play
// ping-pong 20 times: the writer stores the round's data, fences (the home then holds it),
// raises the flag to the round;
// the reader polls the flag through its own caches, then must find the round's data, and
// answers on a third block, which the writer polls before the next round. The home memory
// holds the last round at the end.
TEST(ForeignProc, UserCoresOnTwoNodesHandDataAcrossTheMachineCoherently) {
  constexpr uint32_t kRounds = 20, kMaxPolls = 100000;
  std::unique_ptr<UserCore> writer, reader;
  uint32_t reader_polls = 0, writer_polls = 0, wrong = 0, unfenced = 0;
  mbp::System* sys = nullptr;
  auto data = [](uint32_t i) { return 0x5eed0000u + i; };
  auto bind = [&](mbp::System& s) {
    sys = &s;
    writer = std::make_unique<UserCore>("writer", [&](UserCore& c) {
      for (uint32_t i = 1; i <= kRounds; ++i) {
        c.store(kData, data(i));
        c.fence();  // every earlier store performed everywhere before the flag
        uint32_t home = 0;
        sys->read_home(kData, reinterpret_cast<uint8_t*>(&home), 4);
        if (home != data(i)) ++unfenced;  // the fence returned with the store still buffered
        c.store(kFlag, i);
        while (c.load(kAck) != i && writer_polls < kMaxPolls) ++writer_polls;
      }
    });
    reader = std::make_unique<UserCore>("reader", [&](UserCore& c) {
      for (uint32_t i = 1; i <= kRounds; ++i) {
        while (c.load(kFlag) != i && reader_polls < kMaxPolls) ++reader_polls;
        if (c.load(kData) != data(i)) ++wrong;
        c.store(kAck, i);
      }
    });
    writer->socket.bind(s.processor_port(3, 0).socket);
    reader->socket.bind(s.processor_port(9, 1).socket);
  };
  // The data's page is update-type (a store waits in the writer's write buffer until the
  // fence); the flag's and the answer's are invalidate-type, as every page outside the regions.
  test::MbpHarness h(load_config(test::config_path("mbp16.json"),
                                 {R"(mbp.regions=[{"base": 0, "bytes": 32768, "protocol": "invalidate"},
                                                  {"base": 32768, "bytes": 32768, "protocol": "update"},
                                                  {"base": 268435456, "bytes": 4096, "protocol": "update"}])"}),
                     1, bind);
  EXPECT_NE(sc_core::sc_find_object("system.node3.proc0.port"), nullptr);
  EXPECT_NE(sc_core::sc_find_object("system.node9.proc1.port.socket"), nullptr);
  const uint64_t ops_before = sys->ops_completed();
  sc_core::sc_start(sc_core::sc_time(500, sc_core::SC_US));
  ASSERT_TRUE(sys->failure().empty()) << sys->failure();
  ASSERT_TRUE(writer->finished);
  ASSERT_TRUE(reader->finished);
  EXPECT_EQ(sys->protocol_of(kData / 4096), node::Protocol::Update);
  EXPECT_EQ(sys->protocol_of(kFlag / 4096), node::Protocol::Invalidate);
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(unfenced, 0u);
  // Each side waited for the other every round, and saw the other's store arrive.
  EXPECT_GE(reader_polls, kRounds);
  EXPECT_GE(writer_polls, kRounds);
  EXPECT_LT(reader_polls + writer_polls, kMaxPolls);
  uint32_t home = 0;
  sys->read_home(kData, reinterpret_cast<uint8_t*>(&home), 4);
  EXPECT_EQ(home, data(kRounds));
  sys->read_home(kAck, reinterpret_cast<uint8_t*>(&home), 4);
  EXPECT_EQ(home, kRounds);
  // Every access reached its processor once: stores, fences, loads and polls.
  EXPECT_EQ(sys->processor_port(3, 0).transactions(), kRounds * 3 + kRounds + writer_polls);
  EXPECT_EQ(sys->processor_port(9, 1).transactions(), kRounds * 3 + reader_polls);
  // The workload went on around them on its 62 processors (each makes 20,000 references).
  const uint64_t ports = sys->processor_port(3, 0).transactions() + sys->processor_port(9, 1).transactions();
  EXPECT_GT(sys->ops_completed() - ops_before - ports, 100000u);
  std::printf("polls: writer %u reader %u; workload operations %llu\n", writer_polls, reader_polls,
              static_cast<unsigned long long>(sys->ops_completed() - ops_before - ports));
}

// A hit costs the processor's L1 latency (node.l1_latency 1 cycle at 200 MHz: 5 ns), a miss
// more; the port's refusals are the base protocol's; a port is made before elaboration ends.
TEST(ForeignProc, AccessesCostWhatTheProcessorsCachesCostAndBadOnesAreRefused) {
  std::unique_ptr<UserCore> core;
  uint64_t miss_ps = 0, hit_ps = 0, delayed_ps = 0;
  std::vector<tlm::tlm_response_status> bad;
  mbp::System* sys = nullptr;
  auto bind = [&](mbp::System& s) {
    sys = &s;
    EXPECT_THROW(s.processor_port(16, 0), std::out_of_range);
    EXPECT_THROW(s.processor_port(0, 4), std::out_of_range);
    core = std::make_unique<UserCore>("core", [&](UserCore& c) {
      uint64_t t = now_ps();
      c.load(kData);
      miss_ps = now_ps() - t;
      t = now_ps();
      c.load(kData + 4);  // the same block
      hit_ps = now_ps() - t;
      // The initiator's time offset is waited before the access starts.
      tlm::tlm_generic_payload gp;
      uint32_t v = 0;
      gp.set_command(tlm::TLM_READ_COMMAND);
      gp.set_address(kData);
      gp.set_data_ptr(reinterpret_cast<uint8_t*>(&v));
      gp.set_data_length(4);
      gp.set_streaming_width(4);
      sc_core::sc_time d(100, sc_core::SC_NS);
      t = now_ps();
      c.socket->b_transport(gp, d);
      delayed_ps = now_ps() + d.value() - t;
      uint8_t buf[64] = {};
      uint8_t be[4] = {0xff, 0, 0xff, 0xff};
      bad.push_back(c.access(tlm::TLM_WRITE_COMMAND, kData, buf, 4, be));    // byte enables
      bad.push_back(c.access(tlm::TLM_READ_COMMAND, kData + 28, buf, 8));    // crosses a 32-byte block
      bad.push_back(c.access(tlm::TLM_READ_COMMAND, kData, buf, 64));        // longer than a block
      bad.push_back(c.access(tlm::TLM_READ_COMMAND, kData, buf, 0));         // nothing
    });
    core->socket.bind(s.processor_port(5, 2).socket);
  };
  test::MbpHarness h(load_config(test::config_path("mbp16.json"), {}), 1, bind);
  EXPECT_THROW(sys->processor_port(5, 3), std::logic_error);  // elaborated
  sc_core::sc_start(sc_core::sc_time(50, sc_core::SC_US));
  ASSERT_TRUE(core->finished);
  EXPECT_GT(miss_ps, 5000u);
  EXPECT_EQ(hit_ps, 5000u);
  EXPECT_EQ(delayed_ps, 100000u + 5000u);
  const std::vector<tlm::tlm_response_status> want{tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE, tlm::TLM_BURST_ERROR_RESPONSE,
                                                   tlm::TLM_BURST_ERROR_RESPONSE, tlm::TLM_BURST_ERROR_RESPONSE};
  EXPECT_EQ(bad, want);
  EXPECT_EQ(sys->processor_port(5, 2).transactions(), 3u);  // the refused ones never reached the processor
}

}  // namespace
}  // namespace mbpsim
