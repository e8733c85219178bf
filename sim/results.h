// A run's results folder (`--out DIR`), owned and atomic:
//  - one run at a time: `DIR.lock` beside it, held with flock(2) for the run (a second run
//    into the same DIR is refused, not mixed with the first);
//  - the run writes into `.DIR.partial` beside DIR and renames it into place only when it
//    is complete (renameat2 RENAME_EXCHANGE where the file system has it), so DIR always holds
//    one whole run: the previous one or this one, never a mixture, never a truncated file;
//  - an existing DIR is replaced whole, never merged, and only if it holds nothing but files a
//    run writes (so `--out .` or a folder of the user's own is refused, never emptied);
//    `--keep` refuses to replace an existing DIR at all;
//  - a run that ends without committing (bad input, a crash) leaves DIR as it was; the staging
//    folder is removed, or, after a crash, by the next run into DIR.
#pragma once
#include <filesystem>
#include <string>

namespace mbpsim {

class ResultsDir {
 public:
  // Takes the lock and makes the staging folder; throws UserError (naming DIR) when another
  // run holds DIR, when DIR exists and `keep` is set, when DIR is not a folder a run wrote, or
  // when it cannot be written.
  ResultsDir(const std::string& dir, bool keep);
  ~ResultsDir();
  ResultsDir(const ResultsDir&) = delete;
  ResultsDir& operator=(const ResultsDir&) = delete;

  // Where the run writes its files until commit().
  const std::filesystem::path& staging() const { return staging_; }
  // Writes one file into the staging folder.
  void write(const std::string& name, const std::string& text) const;
  // Puts the staging folder in DIR's place (the old DIR, if any, is removed).
  void commit();

  // The files a run may write: a folder holding anything else is not replaced.
  static bool is_result_file(const std::string& name);

 private:
  std::filesystem::path dir_, staging_, old_, lock_path_;
  int lock_fd_ = -1;
  bool committed_ = false;
};

}  // namespace mbpsim
