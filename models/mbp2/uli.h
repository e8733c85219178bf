// The ULI: user-level doorbell aliases, the Memory-based Virtual Interface (8.3.2).
#pragma once
#include "models/mbp2/kli.h"

namespace mbpsim::mbp2 {

// One doorbell register with a distinct alias address per user task (8.3.2). The OS assigns
// each task one alias, maps the alias's page into that task alone, and tells the NIC by writing
// the alias table in EM through the KLI; at a doorbell the ULI reads the table to name the task
// (the bus does not say who stored: the alias does).
class Uli : public Unit {
 public:
  Uli(Kli& kli, Stats& st, const std::string& name);
  // The OS's writes of the table entry, from `at`: returns when they are done.
  uint64_t assign(uint32_t alias, uint32_t ptask, uint64_t at = 0);
  uint64_t revoke(uint32_t alias, uint64_t at = 0);
  // The task ringing through `alias`: -1 (and counted) when the alias is unassigned.
  int64_t ring(uint32_t alias);
  int64_t alias_of(uint32_t ptask) const;

 private:
  Kli& kli_;
  Counter &rings_, &rejected_;
};

}  // namespace mbpsim::mbp2
