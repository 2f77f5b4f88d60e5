// FlowNetwork worked examples: max-min shares stated in comments, checked with completion times.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "sim/network/flow_network.hpp"

using namespace dtsim;

namespace {

// Runs the network to `now`: advance, collect finished ids, re-solve.
std::vector<int> step(FlowNetwork& net, TimeNs now) {
  net.advance(now);
  std::vector<int> done;
  net.collect_finished(done);
  net.solve();
  return done;
}

}  // namespace

TEST_CASE("one flow on a 100 B/s link: rate 100, 1000 B end at 10 s", "[flow]") {
  FlowNetwork net({100.0});
  const std::vector<int> route = {0};
  const int f = net.add_flow(route, 1000.0, 0);
  net.solve();
  CHECK(net.rate(f) == Approx(100.0));  // alone on the link: the whole 100 B/s
  const auto [t, id] = net.next_completion();
  CHECK(id == f);
  CHECK(t == seconds_to_ns(10.0));  // 1000 B / 100 B/s
  CHECK(step(net, t) == std::vector<int>{f});
  CHECK(net.active_flows() == 0);
  CHECK(net.next_completion() == std::pair<TimeNs, int>{std::numeric_limits<TimeNs>::max(), -1});
}

TEST_CASE("two flows share a link: the survivor speeds up when the short one ends", "[flow]") {
  FlowNetwork net({100.0});
  const std::vector<int> route = {0};
  const int s = net.add_flow(route, 500.0, 0);
  const int l = net.add_flow(route, 1500.0, 0);
  net.solve();
  // Two flows on 100 B/s: 50 each.
  CHECK(net.rate(s) == Approx(50.0));
  CHECK(net.rate(l) == Approx(50.0));
  // Short flow: 500 B / 50 B/s = 10 s.
  auto [t, id] = net.next_completion();
  CHECK(id == s);
  CHECK(t == seconds_to_ns(10.0));
  CHECK(step(net, t) == std::vector<int>{s});
  // Long flow has 1500 - 10 * 50 = 1000 B left, now alone at 100 B/s: 10 s more, ends at 20 s.
  CHECK(net.remaining(l) == Approx(1000.0));
  CHECK(net.rate(l) == Approx(100.0));
  std::tie(t, id) = net.next_completion();
  CHECK(id == l);
  CHECK(t == seconds_to_ns(20.0));
  CHECK(step(net, t) == std::vector<int>{l});
}

TEST_CASE("classic max-min: A(10) shared by flows 1 and 2, B(20) by flows 2 and 3", "[flow]") {
  FlowNetwork net({10.0, 20.0});  // link 0 = A, link 1 = B
  const std::vector<int> a = {0}, ab = {0, 1}, b = {1};
  const int f1 = net.add_flow(a, 1e6, 0);
  const int f2 = net.add_flow(ab, 1e6, 0);
  const int f3 = net.add_flow(b, 1e6, 0);
  net.solve();
  // Shares: A 10/2 = 5, B 20/2 = 10; A is the bottleneck, so flows 1 and 2 get 5.
  // B has 20 - 5 = 15 left for flow 3 alone: 15.
  CHECK(net.rate(f1) == Approx(5.0));
  CHECK(net.rate(f2) == Approx(5.0));
  CHECK(net.rate(f3) == Approx(15.0));
}

TEST_CASE("independent components: a flow on C leaves A/B rates alone", "[flow]") {
  FlowNetwork net({10.0, 20.0, 7.0});  // A, B, C
  const std::vector<int> a = {0}, ab = {0, 1}, b = {1}, c = {2};
  const int f1 = net.add_flow(a, 1e6, 0);
  const int f2 = net.add_flow(ab, 1e6, 0);
  const int f3 = net.add_flow(b, 1e6, 0);
  net.solve();
  const double r1 = net.rate(f1), r2 = net.rate(f2), r3 = net.rate(f3);
  // C shares nothing with A or B: the new flow gets all of C (7), the others keep 5, 5, 15 exactly.
  const int f4 = net.add_flow(c, 1e6, seconds_to_ns(1.0));
  net.solve();
  CHECK(net.rate(f4) == Approx(7.0));
  CHECK(net.rate(f1) == r1);
  CHECK(net.rate(f2) == r2);
  CHECK(net.rate(f3) == r3);
  // A flow joining B is in the A/B component: B 20/2 = 10 > A's 5, so flows 1, 2 keep 5;
  // B's remaining 15 split between flows 3 and 5: 7.5 each. C is untouched.
  const int f5 = net.add_flow(b, 1e6, seconds_to_ns(2.0));
  net.solve();
  CHECK(net.rate(f1) == Approx(5.0));
  CHECK(net.rate(f2) == Approx(5.0));
  CHECK(net.rate(f3) == Approx(7.5));
  CHECK(net.rate(f5) == Approx(7.5));
  CHECK(net.rate(f4) == Approx(7.0));
  // A solve with nothing changed keeps every rate.
  net.solve();
  CHECK(net.rate(f3) == Approx(7.5));
}

TEST_CASE("link accounting (bytes carried, busy time), and a zero-byte flow ends at once", "[flow]") {
  FlowNetwork net({100.0, 50.0});
  const std::vector<int> both = {0, 1}, first = {0}, none = {};
  // Flow over both links is limited by link 1: 50 B/s, so 500 B take 10 s.
  const int f = net.add_flow(both, 500.0, 0);
  net.solve();
  CHECK(net.rate(f) == Approx(50.0));
  auto [t, id] = net.next_completion();
  CHECK(t == seconds_to_ns(10.0));
  CHECK(step(net, t) == std::vector<int>{f});
  // Idle for 5 s, then 200 B on link 0 alone at 100 B/s: 2 s, ending at 17 s.
  const int g = net.add_flow(first, 200.0, seconds_to_ns(15.0));
  net.solve();
  std::tie(t, id) = net.next_completion();
  CHECK(id == g);
  CHECK(t == seconds_to_ns(17.0));
  step(net, t);
  CHECK(net.link_bytes(0) == Approx(700.0));  // 500 + 200
  CHECK(net.link_bytes(1) == Approx(500.0));
  CHECK(net.link_busy_seconds(0) == Approx(12.0));  // 10 s + 2 s, not the idle 5 s
  CHECK(net.link_busy_seconds(1) == Approx(10.0));
  // Zero bytes, or no links: each gets an id (reusing finished ones) and finishes now.
  const TimeNs now = seconds_to_ns(20.0);
  const int z = net.add_flow(first, 0.0, now);
  const int n = net.add_flow(none, 100.0, now);
  CHECK(z != n);
  CHECK(net.active_flows() == 2);
  net.solve();
  std::tie(t, id) = net.next_completion();
  CHECK(t == now);
  CHECK(step(net, now) == std::vector<int>{std::min(z, n), std::max(z, n)});
  CHECK(net.active_flows() == 0);
  CHECK(net.link_busy_seconds(0) == Approx(12.0));
}

TEST_CASE("determinism: the same sequence twice gives the same completions", "[flow]") {
  const auto run = [] {
    FlowNetwork net({100.0, 40.0, 75.0, 10.0, 60.0});
    std::vector<std::pair<TimeNs, int>> events;
    std::size_t finished = 0;
    std::uint64_t seed = 12345;
    const auto next = [&seed] {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<int>(seed >> 33);
    };
    std::vector<int> route;
    TimeNs now = 0;
    for (int i = 0; i < 40; ++i) {
      route.clear();
      const int hops = 1 + next() % 3;
      for (int h = 0; h < hops; ++h) route.push_back(next() % 5);
      std::sort(route.begin(), route.end());
      route.erase(std::unique(route.begin(), route.end()), route.end());
      now += next() % 1000000000;
      finished += step(net, now).size();  // advance to the arrival; retire what ended by then
      net.add_flow(route, 100.0 + next() % 1000, now);
      net.solve();
      // Run completions that fall before the next arrival window.
      for (auto c = net.next_completion(); c.second >= 0 && c.first <= now + 500000000;
           c = net.next_completion()) {
        events.push_back(c);
        now = c.first;
        finished += step(net, now).size();
      }
    }
    for (auto c = net.next_completion(); c.second >= 0; c = net.next_completion()) {
      events.push_back(c);
      finished += step(net, c.first).size();
    }
    CHECK(finished == 40);
    CHECK(net.active_flows() == 0);
    return events;
  };
  const auto first = run();
  const auto second = run();
  CHECK(first.size() >= 30);
  CHECK(first == second);
}

TEST_CASE("a shared link relaxed while it has room couples again when a later flow would overfill it", "[flow]") {
  // Links: A(10) private to flow a, B(100) private to flow b, S(60) shared by both.
  FlowNetwork net({10.0, 100.0, 60.0});
  const std::vector<int> as = {0, 2}, bs = {1, 2};
  const int a = net.add_flow(as, 100.0, 0);
  net.solve();
  CHECK(net.rate(a) == Approx(10.0));  // A binds; S carries 10 of 60
  // Alone b would take 60 on S, overfilling it (10 + 60 > 60): S couples, a keeps 10 (A binds),
  // b gets the 50 left on S.
  const int b = net.add_flow(bs, 800.0, 0);
  net.solve();
  CHECK(net.rate(a) == Approx(10.0));
  CHECK(net.rate(b) == Approx(50.0));
  // a: 100 B / 10 B/s ends at 10 s; b has 800 - 500 = 300 B left, then alone at 60: 5 s more.
  auto [t, id] = net.next_completion();
  CHECK(id == a);
  CHECK(t == seconds_to_ns(10.0));
  CHECK(step(net, t) == std::vector<int>{a});
  CHECK(net.rate(b) == Approx(60.0));
  std::tie(t, id) = net.next_completion();
  CHECK(id == b);
  CHECK(t == seconds_to_ns(15.0));
}

TEST_CASE("relaxed links give the same rates as a fully coupled solve on a chain of shared links", "[flow]") {
  // Flows added one by one, each solve in between: f1 on L0 L1, f2 on L1 L2, f3 on L2 L3, f4 on L3.
  // Capacities 4, 9, 7, 12. Shares L0 4/1, L1 9/2, L2 7/2, L3 12/2: L2 binds first, f2 = f3 =
  // 3.5; then L0 (4 < L1's 9 - 3.5 = 5.5): f1 = 4; then L3: f4 = 12 - 3.5 = 8.5.
  FlowNetwork net({4.0, 9.0, 7.0, 12.0});
  const std::vector<int> r1 = {0, 1}, r2 = {1, 2}, r3 = {2, 3}, r4 = {3};
  const int f1 = net.add_flow(r1, 1e6, 0);
  net.solve();
  const int f2 = net.add_flow(r2, 1e6, 0);
  net.solve();
  const int f3 = net.add_flow(r3, 1e6, 0);
  net.solve();
  const int f4 = net.add_flow(r4, 1e6, 0);
  net.solve();
  CHECK(net.rate(f1) == Approx(4.0));
  CHECK(net.rate(f2) == Approx(3.5));
  CHECK(net.rate(f3) == Approx(3.5));
  CHECK(net.rate(f4) == Approx(8.5));
}

TEST_CASE("a flow crossing a link k times shares it as k flows would", "[flow]") {
  // Link 0 (120 B/s) carries flow a twice (a ring's two hops) and flow b once: three crossings,
  // 40 B/s each, so a moves at 40 B/s (its two crossings at that rate use 80) and b at 40 B/s.
  // Link 1 (1000 B/s) is a's alone and binds nothing.
  FlowNetwork net({120.0, 1000.0});
  const std::vector<int> ring = {0, 1, 0}, once = {0};
  const int a = net.add_flow(ring, 400.0, 0);
  const int b = net.add_flow(once, 800.0, 0);
  net.solve();
  CHECK(net.rate(a) == Approx(40.0));
  CHECK(net.rate(b) == Approx(40.0));
  // a ends at 10 s; b, with 400 B left, then has the link alone: 120 B/s, 10/3 s more.
  auto [t, id] = net.next_completion();
  CHECK(id == a);
  CHECK(t == seconds_to_ns(10.0));
  CHECK(step(net, t) == std::vector<int>{a});
  CHECK(net.rate(b) == Approx(120.0));
  CHECK(net.link_bytes(0) == Approx(800.0));  // a's 400 B, crossing twice
  CHECK(net.link_bytes(1) == Approx(400.0));
  // A flow crossing a link alone k times gets capacity / k (250 B/s: 1 s for 250 B, before b's
  // 10/3 s); removal leaves the link empty.
  const int c = net.add_flow(std::vector<int>{1, 1, 1, 1}, 250.0, t);
  net.solve();
  CHECK(net.rate(c) == Approx(250.0));
  std::tie(t, id) = net.next_completion();
  CHECK(id == c);
  CHECK(t == seconds_to_ns(11.0));
  step(net, t);
  std::tie(t, id) = net.next_completion();
  CHECK(id == b);
  step(net, t);
  CHECK(net.active_flows() == 0);
  CHECK(net.link_bytes(1) == Approx(400.0 + 4 * 250.0));
}

TEST_CASE("max-min rates match a direct progressive filling on random routes", "[flow]") {
  // Direct filling: every round the link with the least residual / unfixed crossings fixes its
  // unfixed flows at that share. The network's lazy heap (one entry per link, re-pushed when it
  // surfaces stale) must give the same rates whatever order the shares change in.
  std::uint64_t seed = 12345;
  auto next = [&seed](int n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((seed >> 33) % static_cast<std::uint64_t>(n));
  };
  for (int trial = 0; trial < 40; ++trial) {
    const int links = 3 + next(6), flows = 2 + next(14);
    std::vector<double> capacity(links);
    for (double& c : capacity) c = 10.0 + next(90);
    std::vector<std::vector<int>> routes(flows);
    for (auto& route : routes) {
      const int hops = 1 + next(std::min(links, 4));
      while (static_cast<int>(route.size()) < hops) {
        const int l = next(links);
        if (std::find(route.begin(), route.end(), l) == route.end()) route.push_back(l);
      }
    }
    FlowNetwork net(capacity);
    std::vector<int> ids;
    for (const auto& route : routes) ids.push_back(net.add_flow(route, 1e9, 0));
    net.solve();

    std::vector<double> rate(flows, 0), residual = capacity;
    std::vector<char> fixed(flows, 0);
    for (int left = flows; left > 0;) {
      int best = -1;
      double least = std::numeric_limits<double>::infinity();
      for (int l = 0; l < links; ++l) {
        int unfixed = 0;
        for (int f = 0; f < flows; ++f)
          if (!fixed[f] && std::count(routes[f].begin(), routes[f].end(), l)) ++unfixed;
        if (unfixed > 0 && residual[l] / unfixed < least) least = residual[l] / unfixed, best = l;
      }
      REQUIRE(best >= 0);
      for (int f = 0; f < flows; ++f) {
        if (fixed[f] || !std::count(routes[f].begin(), routes[f].end(), best)) continue;
        fixed[f] = 1, rate[f] = least, --left;
        for (int l : routes[f]) residual[l] -= least;
      }
    }
    for (int f = 0; f < flows; ++f) {
      INFO("trial " << trial << ", flow " << f);
      CHECK(net.rate(ids[f]) == Approx(rate[f]).epsilon(1e-9));
    }
  }
}
