// What every field of a run's `summary` means: its unit and description, and the workloads that
// write it, declared once for all workloads (a name means one thing wherever it appears). The
// runner refuses to write a field that is not declared here for the run's workload, writes each
// field's unit beside the summary (stats.json "summary_units"), and `mbpsim stats-doc` lists
// them. A figure that was not measured is null, never 0.
#pragma once
#include <string>
#include <vector>

namespace mbpsim {

struct SummaryField {
  std::string name;
  std::string unit;  // bool, text, list or object for what is not a quantity; fraction, ratio
  std::string desc;
  std::vector<std::string> kinds;  // the workload.kind values that write it
};

const std::vector<SummaryField>& summary_fields();
// The field `name` as written by workload `kind`, or nullptr.
const SummaryField* find_summary_field(const std::string& kind, const std::string& name);

}  // namespace mbpsim
