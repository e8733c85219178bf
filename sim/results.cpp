#include "sim/results.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

#include "models/core/error.h"

namespace mbpsim {

namespace fs = std::filesystem;

namespace {

// renameat2(RENAME_EXCHANGE): swaps two paths in one step. False where the kernel or the file
// system does not offer it (the caller then renames twice).
bool exchange(const fs::path& a, const fs::path& b) {
#ifdef RENAME_EXCHANGE
  return ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0;
#else
  (void)a;
  (void)b;
  return false;
#endif
}

}  // namespace

bool ResultsDir::is_result_file(const std::string& name) {
  static const std::set<std::string> known = {"stats.json", "config.resolved.json", "host.json", "failure.json"};
  return known.count(name) > 0;
}

ResultsDir::ResultsDir(const std::string& dir, bool keep) {
  if (dir.empty()) throw UserError("--out: empty folder name");
  std::error_code ec;
  fs::path p = fs::absolute(fs::path(dir), ec);
  if (ec) throw UserError(dir + ": cannot resolve the output folder: " + ec.message());
  p = p.lexically_normal();
  if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  if (!p.has_filename() || p == p.root_path())
    throw UserError(dir + ": not a folder mbpsim can write its results into (give a named folder)");
  dir_ = p;
  const fs::path parent = dir_.parent_path();
  const std::string name = dir_.filename().string();
  if (!fs::is_directory(parent, ec))
    fs::create_directories(parent, ec);
  if (ec || !fs::is_directory(parent))
    throw UserError(dir + ": cannot create the folder it goes in (" + parent.string() + ")" + (ec ? ": " + ec.message() : ""));

  // The lock: a file beside DIR, flock'ed for the run. Who locks a lock file another run has
  // just removed holds nothing, so the path is checked to still name the locked file.
  lock_path_ = parent / (name + ".lock");
  for (int attempt = 0;; ++attempt) {
    lock_fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0) throw UserError(lock_path_.string() + ": cannot create the lock file: " + std::strerror(errno));
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      const int e = errno;
      ::close(lock_fd_);
      lock_fd_ = -1;
      if (e == EWOULDBLOCK)
        throw UserError(dir + ": another mbpsim run is writing its results there (it holds " + lock_path_.string() + ")");
      throw UserError(lock_path_.string() + ": cannot lock: " + std::strerror(e));
    }
    struct stat held, named;
    if (::fstat(lock_fd_, &held) == 0 && ::stat(lock_path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev)
      break;
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (attempt > 100) throw UserError(lock_path_.string() + ": cannot hold the lock (the file keeps changing)");
  }

  try {
    // The staging folder and the place the previous results wait in during a commit have fixed
    // names: only the holder of the lock uses them, so what is there now is a crashed run's.
    // (Names with the run's pid, as before 2026-12-07, had to be looked for by reading the whole
    // parent folder at every run: a sweep's points/ folder, or /tmp, of thousands of entries.)
    // Without DIR, a commit stopped between its two renames (where the file system cannot
    // exchange two paths) left the previous results aside: they go back, as DIR was.
    staging_ = parent / ("." + name + ".partial");
    old_ = parent / ("." + name + ".old");
    if (!fs::exists(dir_, ec) && fs::is_directory(old_, ec)) fs::rename(old_, dir_, ec);
    fs::remove_all(old_, ec);
    fs::remove_all(staging_, ec);
    // What DIR holds now, if anything: replaced whole at commit, so it must be a run's.
    if (fs::is_symlink(dir_, ec))
      throw UserError(dir + ": is a symbolic link; give the folder itself as --out");
    if (fs::exists(dir_, ec)) {
      if (!fs::is_directory(dir_, ec)) throw UserError(dir + ": exists and is not a folder");
      if (keep) throw UserError(dir + ": exists, and --keep refuses to replace it");
      for (const auto& e : fs::directory_iterator(dir_, ec))
        if (!is_result_file(e.path().filename().string()))
          throw UserError(dir + ": holds '" + e.path().filename().string() +
                          "', which no mbpsim run writes; refusing to replace the folder (choose another --out)");
      if (ec) throw UserError(dir + ": cannot read the folder: " + ec.message());
    }
    if (!fs::create_directory(staging_, ec) || ec)
      throw UserError(staging_.string() + ": cannot create the staging folder: " + (ec ? ec.message() : "it exists"));
  } catch (...) {
    ::unlink(lock_path_.c_str());
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw;
  }
}

ResultsDir::~ResultsDir() {
  std::error_code ec;
  if (!committed_ && !staging_.empty()) fs::remove_all(staging_, ec);
  if (lock_fd_ >= 0) {
    ::unlink(lock_path_.c_str());  // while still held: a waiter re-checks the path
    ::close(lock_fd_);
  }
}

void ResultsDir::write(const std::string& name, const std::string& text) const {
  const fs::path p = staging_ / name;
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  if (!f) throw UserError(p.string() + ": cannot write");
  f << text;
  f.flush();
  if (!f) throw UserError(p.string() + ": write failed (disk full?)");
}

void ResultsDir::commit() {
  std::error_code ec;
  if (fs::exists(dir_, ec)) {
    if (exchange(staging_, dir_)) {
      fs::remove_all(staging_, ec);  // it holds the previous results now
    } else {
      fs::rename(dir_, old_, ec);  // (the constructor removed or put back what a crash left there)
      if (ec) throw UserError(dir_.string() + ": cannot move the previous results aside: " + ec.message());
      fs::rename(staging_, dir_, ec);
      if (ec) {
        committed_ = true;  // keep what the run wrote where the message says it is
        throw UserError(dir_.string() + ": cannot put the results in place: " + ec.message() + " (they are in " + staging_.string() + ")");
      }
      fs::remove_all(old_, ec);
    }
  } else {
    fs::rename(staging_, dir_, ec);
    if (ec) {
      committed_ = true;
      throw UserError(dir_.string() + ": cannot put the results in place: " + ec.message() + " (they are in " + staging_.string() + ")");
    }
  }
  committed_ = true;
}

}  // namespace mbpsim
