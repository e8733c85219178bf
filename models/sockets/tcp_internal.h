// What the parts of TCP's implementation share (tcp.cpp, tcp_input.cpp, tcp_output.cpp,
// tcp_timer.cpp), and nothing else includes.
#pragma once
#include <cstdint>

#include "models/sockets/tcp.h"

namespace mbpsim::sockets::tcp_internal {

// Sequence-number comparisons modulo 2^32 (RFC 793 3.3).
inline bool seq_lt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
inline bool seq_le(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) <= 0; }
inline bool seq_gt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) > 0; }
constexpr uint32_t kMaxWin = 65535;  // no window scaling (RFC 1323 is later than both OSs' TCPs)
// Sleep channels of a descriptor, one per thing a call waits for.
enum : uint32_t { kChanConn = 1, kChanAccept = 2, kChanSend = 3, kChanRecv = 4 };  // (select sleeps on the host's channel: InetStack::select_chan)
// The states in which the user may send, and those of a synchronized connection.
inline bool can_send(tcp::State s) { return s == tcp::State::Established || s == tcp::State::CloseWait; }
inline bool connected(tcp::State s) {
  return s != tcp::State::Closed && s != tcp::State::Listen && s != tcp::State::SynSent && s != tcp::State::SynRcvd;
}

}  // namespace mbpsim::sockets::tcp_internal
