// A libFuzzer target run without libFuzzer, for the test suite (gcc, no clang needed): every file
// of the seed folders as it is, then a fixed number of inputs mutated from them by a generator
// with a fixed seed (bit flips, byte overwrites with interesting values, insertions, deletions,
// truncations, a slice repeated, two seeds spliced), so every run tries the same inputs. Built
// with the sanitizers (build-asan/), a crash, a sanitizer report or an exception other than the
// target's expected InputError fails the run. libFuzzer's coverage-guided search stays in
// tests/fuzz/run.sh; this is its fixed-budget counterpart in .ci/run.
// usage: fuzz_replay_NAME ITERATIONS MAX_LEN SEED_DIR...
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

using Bytes = std::vector<std::uint8_t>;

std::vector<Bytes> read_seeds(const std::vector<std::string>& folders) {
  std::vector<std::filesystem::path> files;
  for (const std::string& folder : folders)
    for (const auto& entry : std::filesystem::recursive_directory_iterator(folder))
      if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());  // the same order on every machine
  std::vector<Bytes> seeds;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return seeds;
}

// One random change to `b`, at most `max_len` bytes long afterwards.
void mutate(Bytes& b, const std::vector<Bytes>& seeds, std::size_t max_len, std::mt19937_64& rng) {
  static constexpr std::uint8_t kInteresting[] = {0, 1, 0x7f, 0x80, 0xff, '-', '9', ':', '=', '\n', '[', '"', '{'};
  const auto pick = [&](std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); };
  switch (rng() % 7) {
    case 0:  // flip one bit
      if (!b.empty()) b[pick(b.size())] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      break;
    case 1:  // overwrite a byte with a value parsers care about
      if (!b.empty()) b[pick(b.size())] = kInteresting[pick(std::size(kInteresting))];
      break;
    case 2:  // insert a few random bytes
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(pick(b.size() + 1)), 1 + pick(8),
               static_cast<std::uint8_t>(rng()));
      break;
    case 3: {  // delete a slice
      const std::size_t at = pick(b.size()), n = std::min(b.size() - at, 1 + pick(16));
      b.erase(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
      break;
    }
    case 4:  // truncate
      b.resize(pick(b.size() + 1));
      break;
    case 5: {  // repeat a slice
      if (b.empty()) break;
      const std::size_t at = pick(b.size()), n = std::min(b.size() - at, 1 + pick(64));
      const Bytes slice(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
      b.insert(b.begin() + static_cast<std::ptrdiff_t>(pick(b.size() + 1)), slice.begin(), slice.end());
      break;
    }
    default: {  // splice: the head of this input, the tail of another seed
      const Bytes& other = seeds[pick(seeds.size())];
      const std::size_t keep = pick(b.size() + 1), from = pick(other.size() + 1);
      b.resize(keep);
      b.insert(b.end(), other.begin() + static_cast<std::ptrdiff_t>(from), other.end());
      break;
    }
  }
  if (b.size() > max_len) b.resize(max_len);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: " << argv[0] << " ITERATIONS MAX_LEN SEED_DIR...\n";
    return 2;
  }
  const long iterations = std::strtol(argv[1], nullptr, 10);
  const auto max_len = static_cast<std::size_t>(std::strtoul(argv[2], nullptr, 10));
  const std::vector<Bytes> seeds = read_seeds(std::vector<std::string>(argv + 3, argv + argc));
  if (seeds.empty() || iterations < 0 || max_len == 0) {
    std::cerr << argv[0] << ": no seed files in the folders given, or a bad ITERATIONS / MAX_LEN\n";
    return 2;
  }
  for (const Bytes& s : seeds) LLVMFuzzerTestOneInput(s.data(), s.size());
  std::mt19937_64 rng(20261206);
  for (long i = 0; i < iterations; ++i) {
    Bytes input = seeds[static_cast<std::size_t>(rng() % seeds.size())];
    const int changes = 1 + static_cast<int>(rng() % 4);
    for (int c = 0; c < changes; ++c) mutate(input, seeds, max_len, rng);
    LLVMFuzzerTestOneInput(input.data(), input.size());
  }
  std::cout << argv[0] << ": " << seeds.size() << " seeds and " << iterations << " mutated inputs, no failure\n";
  return 0;
}
