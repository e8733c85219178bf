// `mbpsim sweep`: one config run over the cross product of parameter axes, each point as its
// own `mbpsim run` process (SystemC elaborates once per process), N at a time, resumable, on one
// machine, on many under MPI, or in shards for a batch scheduler's job array. sim/README.md,
// "Sweeps", says what it writes.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace mbpsim {

// The ranks of a sweep launched by mpirun: each runs its share of the points and rank 0
// gathers the rows. Provided by the program when it was built with MPI (sim/sweep_mpi.cpp).
class SweepRanks {
 public:
  virtual ~SweepRanks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's `text`, in rank order, on rank 0 (empty elsewhere).
  virtual std::vector<std::string> gather(const std::string& text) = 0;
  // The largest of every rank's `v`, on every rank.
  virtual int max(int v) = 0;
};

// True when this process was started by an MPI launcher (mpirun, srun with PMIx).
bool launched_by_mpi();
// Set by sim/sweep_mpi.cpp in a program built with MPI: makes the ranks (MPI_Init) when a
// sweep starts under mpirun. Left empty, a sweep under mpirun is refused with the reason.
using SweepRanksFactory = std::unique_ptr<SweepRanks> (*)();
void set_sweep_ranks_factory(SweepRanksFactory f);

}  // namespace mbpsim
