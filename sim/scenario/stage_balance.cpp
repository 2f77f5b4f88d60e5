// Per-stage busy time and a balancing stage split (stage_balance.hpp).
#include "sim/scenario/stage_balance.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dtsim {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Layers per stage with the least largest estimate `extra[s] + per_layer * layers[s]`, each stage
// at least one layer, `total` in all: the smallest bound T that leaves room for every layer
// (bisection), then the surplus taken from the stages estimated longest.
std::vector<int> min_max_split(const std::vector<double>& extra, double per_layer, int total) {
  const int pp = static_cast<int>(extra.size());
  const auto fill = [&](double bound) {
    std::vector<int> n(pp);
    for (int s = 0; s < pp; ++s) n[s] = std::max(1, static_cast<int>(std::floor((bound - extra[s]) / per_layer + 1e-9)));
    return n;
  };
  const auto room = [&](double bound) {
    const std::vector<int> n = fill(bound);
    return std::accumulate(n.begin(), n.end(), 0) >= total;
  };
  double lo = 0, hi = *std::max_element(extra.begin(), extra.end()) + per_layer * total;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (room(mid) ? hi : lo) = mid;
  }
  std::vector<int> n = fill(hi);
  for (int surplus = std::accumulate(n.begin(), n.end(), 0) - total; surplus > 0; --surplus) {
    int longest = -1;  // on ties the later stage gives up its layer: in 1F1B the earlier stages wait less
    for (int s = pp - 1; s >= 0; --s)
      if (n[s] > 1 && (longest < 0 || extra[s] + per_layer * n[s] > extra[longest] + per_layer * n[longest]))
        longest = s;
    if (longest < 0) break;
    --n[longest];
  }
  return n;
}

}  // namespace

StageBalance stage_balance(const ParallelPlan& plan, const std::vector<RankRecord>& ranks) {
  StageBalance b;
  const int pp = plan.pp;
  b.busy_s.assign(pp, 0.0);
  for (const RankRecord& r : ranks)
    if (r.pp >= 0 && r.pp < pp) b.busy_s[r.pp] = std::max(b.busy_s[r.pp], r.compute_s + r.memory_bound_s);
  b.slowest = static_cast<int>(std::max_element(b.busy_s.begin(), b.busy_s.end()) - b.busy_s.begin());
  const double typical = median(b.busy_s);
  b.spread = typical > 0 ? b.busy_s[b.slowest] / typical - 1 : 0;
  const std::vector<int>& layers = plan.stage_layers;
  if (pp < 2 || plan.virtual_stages > 1 || b.spread <= kStageImbalanceToReport || static_cast<int>(layers.size()) != pp)
    return b;
  // A layer's time from the middle stages (the first stage's alone when there are only two); the
  // end stages' extra time (embedding, head) is what their layers do not explain.
  std::vector<double> per_layer;
  for (int s = 1; s + 1 < pp; ++s) per_layer.push_back(b.busy_s[s] / layers[s]);
  const double t = pp > 2 ? median(per_layer) : b.busy_s[0] / layers[0];
  if (!(t > 0)) return b;
  std::vector<double> extra(pp, 0.0);
  extra[0] = std::max(0.0, b.busy_s[0] - t * layers[0]);
  extra[pp - 1] = std::max(0.0, b.busy_s[pp - 1] - t * layers[pp - 1]);
  const std::vector<int> split = min_max_split(extra, t, std::accumulate(layers.begin(), layers.end(), 0));
  double estimate = 0;
  for (int s = 0; s < pp; ++s) estimate = std::max(estimate, extra[s] + t * split[s]);
  // Suggest a split only when it shortens the slowest stage by more than 2 %.
  if (split != layers && estimate < 0.98 * b.busy_s[b.slowest]) b.balanced = split;
  return b;
}

}  // namespace dtsim
