#include "models/mbp2/csu.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/core/error.h"
#include "models/mbp2/inet.h"

namespace mbpsim::mbp2 {

Csu::Csu(Stats& st, const std::string& name)
    : Unit(name),
      tx_(st.counter(name + ".tx", "checksums computed on packet images written by the PGE (CSU-T)")),
      rx_(st.counter(name + ".rx", "checksums verified on frames written by the LDMA (CSU-R)")),
      bad_(st.counter(name + ".bad", "received frames whose TCP/UDP checksum failed")),
      bytes_(st.counter(name + ".bytes", "bytes summed, both parts")) {}

uint16_t Csu::transmit(const std::vector<uint8_t>& f) {
  tx_.inc();
  bytes_.inc(f.size());
  return l4_checksum(f);
}

void Csu::fragment(const std::vector<uint8_t>& f) { bytes_.inc(f.size()); }

bool Csu::joined(const std::vector<uint8_t>& whole) {
  rx_.inc();
  const bool ok = l4_verifies(whole);
  if (!ok) bad_.inc();
  return ok;
}

bool Csu::receive(const std::vector<uint8_t>& f) {
  rx_.inc();
  bytes_.inc(f.size());
  const bool ok = l4_verifies(f);
  if (!ok) bad_.inc();
  return ok;
}

}  // namespace mbpsim::mbp2
