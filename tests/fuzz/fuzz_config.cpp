// libFuzzer harness: config loading as `mbpsim run` does it (models/core/config.cpp), then the
// typed configs every component builds from it, then a load-dump-load round trip.
//  - Bad input must end in a UserError (the one-line message the CLI prints); any other
//    exception, a crash or a sanitizer report is a bug.
//  - An accepted config's resolved form must load again and resolve to the same values.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "models/core/config.h"
#include "models/core/error.h"
#include "models/mbcf/ether_system.h"
#include "models/mbp/mbp_config.h"
#include "models/mbp2/mbp2_cards.h"
#include "models/net/net_config.h"
#include "models/node/node_config.h"
#include "sim/runner.h"

using namespace mbpsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("mbpsim_fuzz_config_" + std::to_string(::getpid()) + ".json")).string();
  // The scratch file goes when the process ends (libFuzzer and the corpus replayer exit
  // normally); it used to stay in the temporary folder, one per run.
  static const struct RemoveAtExit {
    ~RemoveAtExit() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } cleanup;
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const ParamSchema& s = schema();
  std::optional<Config> c;
  try {
    c.emplace(Config::load_file(s, path));
  } catch (const UserError&) {
    return 0;
  }
  // The component checks that need no SystemC elaboration.
  try { net::NetConfig::from(*c); } catch (const UserError&) {}
  try { node::NodeConfig::from(*c); } catch (const UserError&) {}
  try { mbp::MbpConfig::from(*c); } catch (const UserError&) {}
  try { mbcf::EtherSysConfig::from(*c); } catch (const UserError&) {}
  try { mbp2::Mbp2Config::from(*c); } catch (const UserError&) {}
  // Round trip: what `config.resolved.json` holds must load back to the same values.
  const nlohmann::ordered_json r = c->resolved();
  const Config again = Config::from_json(s, nlohmann::json::parse(r.dump()), "<resolved>");
  if (again.resolved() != r) {
    std::fprintf(stderr, "fuzz_config: the resolved config does not load back to itself\n");
    std::abort();
  }
  return 0;
}
