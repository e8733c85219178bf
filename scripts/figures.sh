#!/usr/bin/env bash
# The project's reference figures, into docs/figures/ (docs/figures/README.md says what each
# shows), made with `mbpsim sweep` and `mbpsim plot` like any user's:
#   - the BookSim2 cross-validation: latency against offered load on the 64-node quad tree,
#     mbpsim's curve and BookSim2's points (docs/figures/data/booksim2-qtree64.json);
#   - acknowledge combining on and off: the multicast acknowledgement latency of the default
#     experiment against offered load, three seeds per point (range as error bars);
#   - the chapter-6 comparisons of MBCF/Ether with the socket stacks (scripts/chapter6_figures.py);
#   - with --screenshot, Figure 2.7's transaction timeline in Chromium's trace viewer
#     (scripts/timeline-screenshot.py; needs the Debian packages chromium and python3-websocket).
# Needs build/bin/mbpsim and python3-matplotlib (scripts/setup.sh figures installs and builds).
#   scripts/figures.sh [--screenshot] [OUT_DIR]   (default docs/figures; the sweeps go to
#                                                  build/figure-sweeps, resumed when run again)
set -euo pipefail
cd "$(dirname "$0")/.."
shot=0
if [ "${1:-}" = --screenshot ]; then shot=1; shift; fi
out=${1:-docs/figures}
bin=build/bin/mbpsim
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
sweeps=build/figure-sweeps
mkdir -p "$out" "$sweeps"

# BookSim2 cross-validation (docs/VALIDATION.md): the loads of its table.
$bin sweep configs/net-qtree64-booksim.json --quiet --out "$sweeps/booksim" \
  --grid 'workload.injection_rate=[0.01,0.02,0.03,0.04,0.05,0.055,0.06]' || [ $? -eq 3 ]
$bin plot "$sweeps/booksim" --x workload.injection_rate --y avg_unicast_latency_cycles \
  --ref docs/figures/data/booksim2-qtree64.json --title "64-node quad tree: mbpsim and BookSim2" \
  --out "$out/booksim-qtree64-latency.png"

# Acknowledge combining (Fig. 2.8) on and off, multicast traffic of configs/default.json.
$bin sweep configs/default.json --quiet --out "$sweeps/combining" \
  --grid 'workload.injection_rate=[0.002,0.005,0.01,0.015,0.02]' --grid 'network.combining=[true,false]' --seed 1,2,3 || [ $? -eq 3 ]
$bin plot "$sweeps/combining" --x workload.injection_rate --y avg_ack_latency_cycles --series network.combining \
  --log-y --title "64-node quad tree, 25% multicast of fan-out 6: acknowledge combining" --out "$out/combining-ack-latency.png"

/usr/bin/python3 scripts/chapter6_figures.py "$out"

if [ $shot = 1 ]; then
  $bin run configs/fig2-7-multicast.json --quiet --out "$sweeps/fig27" --timeline "$sweeps/fig27-timeline.json"
  /usr/bin/python3 scripts/timeline-screenshot.py "$sweeps/fig27-timeline.json" "$out/fig2-7-timeline.png" --height 1300
fi
