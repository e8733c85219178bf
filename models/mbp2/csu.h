// The CSU: TCP/UDP checksums summed as data streams into EM (8.2).
#pragma once
#include "models/mbp2/unit.h"

namespace mbpsim::mbp2 {

// The CSU (8.2): TCP and UDP checksums computed on the data as it streams into EM, by CSU-T on
// the PGE's writes of a packet image and by CSU-R on the LDMA's writes of a received frame. It
// adds no time (it runs beside the stream); the PME reads its result from the descriptor and
// adds the pseudo-header. Without one, the PME's firmware sums the frame's words itself.
class Csu : public Unit {
 public:
  Csu(Stats& st, const std::string& name);
  // CSU-T: the checksum of an image whose checksum field is zero.
  uint16_t transmit(const std::vector<uint8_t>& frame);
  // CSU-R: true when the frame's checksum verifies.
  bool receive(const std::vector<uint8_t>& frame);
  // CSU-R on an IP fragment: a partial sum over its piece, which the PME keeps (a piece alone
  // has no verdict); `joined` is the PME's fold of a reassembled datagram's partial sums with
  // its pseudo-header: true when the whole datagram verifies.
  void fragment(const std::vector<uint8_t>& frame);
  bool joined(const std::vector<uint8_t>& whole);

 private:
  Counter &tx_, &rx_, &bad_, &bytes_;
};

}  // namespace mbpsim::mbp2
