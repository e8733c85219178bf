#include <cmath>

#include "models/core/params.h"
#include "models/mbp/mbp_config.h"

namespace mbpsim::mbp {

namespace {
std::vector<double> weights(const Config& c, const std::string& key) {
  const auto& j = c.get_json(key);
  if (!j.is_array() || j.size() != 3)
    c.fail(key, "must be a list of three weights");
  std::vector<double> w;
  double sum = 0;
  for (const auto& e : j) {
    if (!e.is_number() || e.get<double>() < 0 || !std::isfinite(e.get<double>()))
      c.fail(key, "weights must be non-negative numbers");
    w.push_back(e.get<double>());
    sum += w.back();
  }
  if (sum <= 0) c.fail(key, "at least one weight must be positive");
  return w;
}

// mbp.regions: each entry checked, its place named in the error.
void load_regions(MbpConfig& m, const Config& c) {
  m.regions.clear();
  const auto& regions = c.get_json("mbp.regions");
  if (!regions.is_array()) c.fail("mbp.regions", "must be a list of {base, bytes, protocol, format}");
  for (size_t i = 0; i < regions.size(); ++i) {
    const auto& r = regions[i];
    const std::string where = "mbp.regions[" + std::to_string(i) + "]";
    auto bad = [&](const std::string& sub, const std::string& msg) { c.fail_at("mbp.regions", where + sub, msg); };
    if (!r.is_object()) bad("", "must be an object {base, bytes, protocol, format}");
    Region g;
    for (auto it = r.begin(); it != r.end(); ++it) {
      const std::string& k = it.key();
      if (k == "base" || k == "bytes") {
        const auto& v = it.value();
        if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
          bad("." + k, "must be a non-negative integer");
        (k == "base" ? g.base : g.bytes) = v.get<uint64_t>();
      } else if (k == "protocol") {
        const std::string v = it.value().is_string() ? it.value().get<std::string>() : "";
        g.protocol = v == "invalidate" ? 0 : v == "update" ? 1 : v == "noncacheable" ? 2 : -2;
        if (g.protocol == -2) bad(".protocol", "must be invalidate, update or noncacheable");
      } else if (k == "format") {
        const std::string v = it.value().is_string() ? it.value().get<std::string>() : "";
        g.format = v == "hbitmap" ? 0 : v == "pointers" ? 1 : v == "fullmap" ? 2 : -2;
        if (g.format == -2) bad(".format", "must be hbitmap, pointers or fullmap");
      } else {
        bad("", "unknown key \"" + k + "\" (base, bytes, protocol, format)");
      }
    }
    if (g.bytes == 0) bad(".bytes", "must be given and positive");
    m.regions.push_back(g);
  }
}
}  // namespace

// The thesis names the MBP's parts but gives no timing for them; the MBP is a memory-side
// engine of its era (a 100 MHz ASIC next to each DRAM bank, like the MAGIC chip of Stanford
// FLASH, whose handlers took roughly 10-40 cycles). Each line says where its number comes from.
const ParamTable<MbpConfig>& MbpConfig::params() {
  using nlohmann::json;
  static const ParamTable<MbpConfig> t = ParamTable<MbpConfig>()
      .add(&MbpConfig::clock_mhz, {"mbp.clock_mhz", 100.0, "MHz", "MBP engine clock (a 1990s memory-side ASIC, like FLASH's MAGIC at 100 MHz)", 1, 100000})
      .add(&MbpConfig::handler_cycles, {"mbp.handler_cycles", 8, "mbp cycles", "decode a message or bus request, read and write the block's state tags, start the reply (hard-wired handler; MAGIC's took 10-40 with a programmable core)", 1, 10000})
      .add(&MbpConfig::ctlb_entries, {"mbp.ctlb_entries", 256, "", "C-TLB entries (node-physical page -> network page, protocol, cached directory entry)", 1, 1 << 20})
      .add(&MbpConfig::ctlb_assoc, {"mbp.ctlb_assoc", 4, "ways", "C-TLB associativity", 1, 1 << 20})
      .add(&MbpConfig::ctlb_miss_cycles, {"mbp.ctlb_miss_cycles", 12, "mbp cycles", "C-TLB refill from the node's translation table in memory (one DRAM access, 80-100 ns, plus the fill)", 0, 100000})
      .add(&MbpConfig::ntlb_entries, {"mbp.ntlb_entries", 256, "", "N-TLB entries (network page -> node-physical page)", 1, 1 << 20})
      .add(&MbpConfig::ntlb_assoc, {"mbp.ntlb_assoc", 4, "ways", "N-TLB associativity", 1, 1 << 20})
      .add(&MbpConfig::ntlb_miss_cycles, {"mbp.ntlb_miss_cycles", 12, "mbp cycles", "N-TLB refill (one DRAM access plus the fill)", 0, 100000})
      .add(&MbpConfig::header_flits, {"mbp.header_flits", 2, "flits", "message header: command, source, requester and network address in two 64-bit flits", 1, 64})
      .add(&MbpConfig::pointers, {"mbp.pointers", 4, "", "pointers format: exact sharer ids per page before it overflows into a hierarchical bitmap", 1, 64})
      .add(&MbpConfig::fullmap_unicast_max, {"mbp.fullmap_unicast_max", 4, "", "fullmap format: largest sharer set sent as unicasts when a multicast would reach extra nodes", 0, 65536})
      .add_choice(&MbpConfig::home_policy, {"mbp.home_policy", "interleave", "", "home node of a page: page number modulo nodes, first node to touch it, or blocks of block_pages pages"},
                  {{"interleave", HomePolicy::Interleave}, {"first_touch", HomePolicy::FirstTouch}, {"block", HomePolicy::Block}})
      .add(&MbpConfig::block_pages, {"mbp.block_pages", 16, "pages", "home_policy block: consecutive pages per home", 1, 1e12})
      .add_custom(ParamType::Json, {"mbp.protocol_mix", json::array({1.0, 0.0, 0.0}), "", "weights of invalidate, update and non-cacheable pages; each page draws its initial protocol from them (seeded)", -1e300, 1e300},
                  [](MbpConfig& m, const Config& c) { m.protocol_mix = weights(c, "mbp.protocol_mix"); },
                  [](const MbpConfig& m) { return nlohmann::json(m.protocol_mix); })
      .add_custom(ParamType::Json, {"mbp.format_mix", json::array({1.0, 0.0, 0.0}), "", "weights of the hbitmap, pointers and fullmap directory formats; each page draws one (seeded)", -1e300, 1e300},
                  [](MbpConfig& m, const Config& c) { m.format_mix = weights(c, "mbp.format_mix"); },
                  [](const MbpConfig& m) { return nlohmann::json(m.format_mix); })
      .add_custom(ParamType::Json, {"mbp.regions", json::array(), "", "list of {base, bytes, protocol: invalidate|update|noncacheable, format: hbitmap|pointers|fullmap}: the pages of each address range get these attributes (first match wins; either key may be left out)", -1e300, 1e300}, load_regions)
      .add(&MbpConfig::write_buffer, {"mbp.write_buffer", 8, "entries", "per-processor buffer of stores to update and non-cacheable pages awaiting their home's acknowledgement", 1, 1024})
      .add(&MbpConfig::check_invariants, {"mbp.check_invariants", false, "", "online checkers: single writer / multiple readers and data value on invalidate pages, copies equal home after each update round", 0, 1})
      .add_as(ParamType::Double, &MbpConfig::watchdog_ns, {"mbp.watchdog_ns", 2.0e6, "ns", "a processor operation outstanding this long fails the run (exit 2, dump)", 1000, 1e15});
  return t;
}

MbpConfig::MbpConfig() { params().set_defaults(*this); }

void declare_mbp_params(ParamSchema& s) { MbpConfig::params().declare(s); }

MbpConfig MbpConfig::from(const Config& c) {
  MbpConfig m;
  params().load(m, c);
  auto tlb = [&](const char* key, uint32_t entries, uint32_t assoc) {
    const uint32_t sets = entries / assoc;
    if (entries % assoc || (sets & (sets - 1)))
      c.fail(key, "entries / associativity must be a whole power of two");
  };
  tlb("mbp.ctlb_assoc", m.ctlb_entries, m.ctlb_assoc);
  tlb("mbp.ntlb_assoc", m.ntlb_entries, m.ntlb_assoc);
  return m;
}

}  // namespace mbpsim::mbp
