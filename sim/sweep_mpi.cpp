// The ranks of `mbpsim sweep` under mpirun, on Open MPI (sim/sweep.h). Compiled into the
// mbpsim program only, and only when CMake finds MPI: the test binaries and the libraries never
// link it. MPI is initialised when a sweep starts under a launcher, never for a plain run.
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "sim/sweep.h"

namespace mbpsim {
namespace {

class MpiRanks : public SweepRanks {
 public:
  MpiRanks() {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiRanks() override {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<std::string> gather(const std::string& text) override {
    int len = static_cast<int>(text.size());
    std::vector<int> lens(rank_ == 0 ? size_ : 0), offs(rank_ == 0 ? size_ : 0);
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::string all;
    if (rank_ == 0) {
      int total = 0;
      for (int r = 0; r < size_; ++r) offs[r] = total, total += lens[r];
      all.resize(total);
    }
    MPI_Gatherv(text.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    std::vector<std::string> out;
    if (rank_ == 0)
      for (int r = 0; r < size_; ++r) out.push_back(all.substr(offs[r], lens[r]));
    return out;
  }
  int max(int v) override {
    int m = v;
    MPI_Allreduce(&v, &m, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return m;
  }

 private:
  int rank_ = 0, size_ = 1;
};

std::unique_ptr<SweepRanks> make_mpi_ranks() { return std::make_unique<MpiRanks>(); }

}  // namespace

// Called by sc_main before the command line is read.
void install_mpi_sweep() { set_sweep_ranks_factory(&make_mpi_ranks); }

}  // namespace mbpsim
