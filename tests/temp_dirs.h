// The folders test::temp_dir made in this process. test_main removes them when every test
// passed; a failing test's files stay for inspection (MBPSIM_KEEP_TEST_DIRS=1 keeps them all).
#pragma once
#include <filesystem>
#include <vector>

namespace mbpsim::test {

inline std::vector<std::filesystem::path>& temp_dirs_made() {
  static std::vector<std::filesystem::path> dirs;
  return dirs;
}

}  // namespace mbpsim::test
