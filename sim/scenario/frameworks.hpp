// Framework profiles: how a training framework executes a step (attention kernel, dropout,
// gradient-accumulation fusion, TP and DP communication overlap, gradient reduction precision,
// sequence parallelism, the default sharding). A profile is named by `training.framework`; it
// gives the scenario keys it sets a value each, with the framework file or document it was read
// from. Keys given in a scenario file or on the command line win over the profile. `run`,
// `validate`, `fit`, `advise` and `sweep` all apply the same profiles (apply_framework).
#pragma once
#include <boost/program_options/variables_map.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

// When a setting applies: always, only with (or without) fp16 training, or only with tensor
// parallelism (parallel.tp > 1).
enum class Condition { any, fp16, not_fp16, tensor_parallel, no_tensor_parallel };

struct FrameworkSetting {
  const char* key;     // a scenario key, e.g. "training.attention"
  const char* value;   // its value under this framework
  const char* source;  // the framework's code or documentation it comes from
  Condition when = Condition::any;
};

struct FrameworkProfile {
  const char* name;      // the value of training.framework, e.g. "megatron-core"
  const char* title;     // the framework and the versions the settings were read from
  const char* summary;   // one line: what sets it apart
  std::vector<FrameworkSetting> settings;
};

// Every profile, in the order `dtsim catalog frameworks` lists them.
const std::vector<FrameworkProfile>& framework_profiles();

// The profile named `name`; throws InputError listing the valid names.
const FrameworkProfile& find_framework(std::string_view name);

// The value profile `profile` gives `key` whatever the precision and TP (training.attention, say);
// throws InputError for an unknown profile or a key it sets only under a condition.
std::string_view unconditional_setting(std::string_view profile, std::string_view key);

// The scenario keys a profile sets (every profile sets each of them, for each precision and TP).
const std::vector<std::string>& framework_keys();

// The profile that the free text of a published run's framework column describes (e.g. "NeMo
// 24.07 / Megatron-Core", "Megatron-LM (2021, DDP-impl local)", "torchtitan (early 2024)"), and
// the rule that chose it; name is empty when no rule matches. `zero_stage` is the run's sharding
// (a Megatron-LM row run with DeepSpeed's ZeRO-3 is a DeepSpeed run).
struct FrameworkMatch {
  std::string name;
  std::string rule;
};
FrameworkMatch framework_for_text(std::string_view text, int zero_stage);

// Replaces, in `vm`, each key the profile named by vm["training.framework"] sets and that was
// left at its default by the file and the command line with the profile's value for
// vm["training.precision"] and vm["parallel.tp"]. Throws InputError (prefixed with `source`) for
// an unknown profile.
void apply_framework(boost::program_options::variables_map& vm, const std::string& source);

}  // namespace dtsim
