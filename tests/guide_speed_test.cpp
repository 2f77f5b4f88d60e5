// `dtsim fit --seed-table`'s speeds: the decode speed of the guide's cards is dtsim serve's, in the
// widest weight format that fits; the cheapest priced set that reaches a speed is the cheapest
// (no cheaper set reaches it), prices come from the shipped file and --price, and bad prices are
// refused naming them.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "sim/base/error.hpp"
#include "sim/validation/guide_speed.hpp"
#include "topologies/gpu_catalog.hpp"
#include "workloads/model.hpp"

using namespace dtsim;
namespace fs = std::filesystem;

TEST_CASE("the guide's cards decode at dtsim serve's speed in the widest format that fits", "[fit][serve]") {
  // Llama 3.1 8B on one RTX 3090: bf16 (16 GB of weights) fits in 24 GB, so bf16 is served; one
  // sequence streams the weights every token, near the card's memory rate.
  const GuideServing bf16 = guide_speed("llama3.1-8b", "RTX-3090", 1);
  REQUIRE(bf16.modelled);
  REQUIRE(bf16.fits);
  CHECK(bf16.weights == WeightFormat::bf16);
  const double floor_tokens_per_s = find_gpu("RTX-3090").hbm_bytes_per_s / (2 * 7.5e9);
  CHECK(bf16.decode_tokens_per_s < floor_tokens_per_s);
  CHECK(bf16.decode_tokens_per_s > 0.7 * floor_tokens_per_s);
  // On an 8 GB RTX 3070 only int4 fits, and 4-bit weights decode faster than 16-bit ones.
  const GuideServing int4 = guide_speed("llama3.1-8b", "RTX-3070-8GB", 1);
  REQUIRE(int4.fits);
  CHECK(int4.weights == WeightFormat::int4);
  CHECK(int4.decode_tokens_per_s > bf16.decode_tokens_per_s);
  // Llama 3 70B int4 on two cards runs TP 2; where it fits nowhere the reason says so.
  const GuideServing pair = guide_speed("llama3-70b", "RTX-3090", 2);
  CHECK(pair.tp == 2);
  CHECK(pair.weights == WeightFormat::int4);
  const GuideServing none = guide_speed("llama3-70b", "RTX-3090", 1);
  CHECK_FALSE(none.fits);
  CHECK_THAT(none.reason, Catch::Contains("does not fit on 1 x RTX-3090"));
  // DeepSeek R1 on the guide's 16 A100: bf16 fits as TP 8 in each machine, two pipeline stages.
  const GuideServing moe = guide_speed("deepseek-r1", "A100-SXM4-80GB", 16);
  REQUIRE(moe.fits);
  CHECK(moe.weights == WeightFormat::bf16);
  CHECK(moe.tp == 8);
  CHECK(moe.pp == 2);
  // No 8 priced consumer cards hold it even in int4 (335 GB of weights).
  CHECK_THAT(cheapest_for_speed("deepseek-r1", 20, read_gpu_prices(default_prices_path(), {})).reason,
             Catch::Contains("holds deepseek-r1"));
}

TEST_CASE("the cheapest priced set that reaches a speed, and no cheaper one does", "[fit][serve]") {
  const std::map<std::string, double> prices = read_gpu_prices(default_prices_path(), {});
  CHECK(prices.at("RTX-3090") == 1499);
  CHECK(prices.at("RTX-4090") == 1599);
  const double target = 20;
  const GuideServing best = cheapest_for_speed("llama3-70b", target, prices);
  REQUIRE(best.modelled);
  REQUIRE(best.fits);
  CHECK(best.decode_tokens_per_s >= target);
  CHECK(best.usd == Approx(best.gpus * prices.at(best.gpu)));
  // Every cheaper set of the catalog's priced cards misses the speed in its fastest format (int4)
  // or does not hold the model.
  int cheaper = 0;
  for (const auto& [gpu, usd] : prices)
    for (int n : {1, 2, 4, 8}) {
      if (n * usd >= best.usd) continue;
      ++cheaper;
      const GuideServing s = guide_speed_in("llama3-70b", gpu, n, WeightFormat::int4);
      INFO(n << " x " << gpu << ": " << s.decode_tokens_per_s << " tokens/s, fits " << s.fits);
      CHECK((!s.fits || s.decode_tokens_per_s < target));
    }
  CHECK(cheaper > 0);
  // A --price over the file's: a cheap enough RTX 3090 becomes the answer.
  const GuideServing cheap = cheapest_for_speed("llama3-70b", target, read_gpu_prices(default_prices_path(), {{"3090", 100}}));
  CHECK(cheap.gpu == "RTX-3090");
  CHECK(cheap.usd == Approx(cheap.gpus * 100.0));
  // Out of reach: the reason names the speed.
  CHECK_THAT(cheapest_for_speed("llama3-70b", 5000, prices).reason, Catch::Contains("5000 tokens/s"));
}

TEST_CASE("bad prices are refused naming the file, row or --price", "[fit][serve]") {
  const fs::path file = fs::temp_directory_path() / ("dtsim_prices_" + std::to_string(::getpid()) + ".csv");
  auto error = [&](const std::string& text, const std::map<std::string, double>& extra = {}) -> std::string {
    std::ofstream(file) << text;
    try {
      read_gpu_prices(file.string(), extra);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  CHECK_THAT(error("gpu,usd\nRTX-9999,100\n"), Catch::Contains("row 2") && Catch::Contains("RTX-9999"));
  CHECK_THAT(error("gpu,usd\nRTX-3090,free\n"), Catch::Contains("usd = 'free'"));
  CHECK_THAT(error("name,price\n"), Catch::Contains("gpu,usd"));
  CHECK_THAT(error("gpu,usd\n", {{"RTX-3090", -5}}), Catch::Contains("--price RTX-3090"));
  CHECK_THAT(error("gpu,usd\n", {{"A100", 0}}), Catch::Contains("--price A100"));
  fs::remove(file);
  CHECK_THROWS_WITH(read_gpu_prices("/nonexistent/prices.csv", {}), Catch::Contains("/nonexistent/prices.csv"));
}
