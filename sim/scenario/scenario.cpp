// Reading scenarios: the keys of scenario_keys.cpp from a file and the command line, parsed and
// checked, and the reading of a file's [sweep] section (its axes are parsed by sim/sweep_axes).
// Values are read as text and converted here, so every error names the key, the value and what
// would be valid.
#include "sim/scenario/scenario.hpp"

#include <fmt/format.h>

#include <boost/any.hpp>
#include <boost/program_options/parsers.hpp>
#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "sim/base/error.hpp"
#include "sim/base/nearest.hpp"
#include "sim/base/limits.hpp"
#include "sim/scenario/frameworks.hpp"
#include "sim/scenario/layout_choice.hpp"
#include "sim/scenario/scenario_values.hpp"
#include "sim/base/input_file.hpp"

namespace po = boost::program_options;

namespace dtsim {
namespace {


// Keys of the [inference] section, read only by dtsim serve.
bool inference_key(const std::string& name) { return name.rfind("inference.", 0) == 0; }


ModelShape read_model(const Values& v) {
  const std::string name = v.text("model.name");
  ModelShape m;
  if (name == "custom") {
    for (const char* key : {"model.layers", "model.hidden", "model.heads", "model.vocab", "model.seq_len"})
      if (!v.given(key))
        throw InputError(fmt::format("{}: {} is required when model.name = custom", v.source(), key));
  } else {
    m = v.parsed([&] { return find_model(name); });
  }
  if (v.given("model.layers")) m.layers = v.integer("model.layers", 1);
  if (v.given("model.hidden")) m.hidden = v.integer("model.hidden", 1, limits::kMaxHidden);
  if (v.given("model.heads")) m.heads = v.integer("model.heads", 1);
  if (v.given("model.kv_heads")) m.kv_heads = v.integer("model.kv_heads", 1);
  if (v.given("model.head_dim")) m.head_dim = v.integer("model.head_dim", 1, limits::kMaxHidden);
  if (v.given("model.ffn_hidden")) m.ffn_hidden = v.integer("model.ffn_hidden", 1, limits::kMaxHidden);
  if (v.given("model.ffn")) m.ffn = v.parsed([&] { return parse_ffn_kind(v.text("model.ffn"), "model.ffn"); });
  if (v.given("model.vocab")) m.vocab = v.integer("model.vocab", 1);
  if (v.given("model.seq_len")) m.seq_len = v.integer("model.seq_len", 1);
  if (v.given("model.tied_embeddings")) m.tied_embeddings = v.boolean("model.tied_embeddings");
  if (v.given("model.position_embedding"))
    m.position = v.parsed([&] { return parse_position_embedding(v.text("model.position_embedding"), "model.position_embedding"); });
  if (v.given("model.norm")) m.norm = v.parsed([&] { return parse_norm_kind(v.text("model.norm"), "model.norm"); });
  if (v.given("model.embedding_norm")) m.embedding_norm = v.boolean("model.embedding_norm");
  if (v.given("model.bias")) m.bias = v.boolean("model.bias");
  if (v.given("model.parallel_block")) m.parallel_block = v.boolean("model.parallel_block");
  if (v.given("model.experts")) m.experts = v.integer("model.experts", 0, limits::kMaxHidden);
  if (v.given("model.active_experts")) m.active_experts = v.integer("model.active_experts", 1, limits::kMaxHidden);
  if (v.given("model.shared_experts")) m.shared_experts = v.integer("model.shared_experts", 0, limits::kMaxHidden);
  if (v.given("model.expert_ffn_hidden")) m.expert_ffn_hidden = v.integer("model.expert_ffn_hidden", 1, limits::kMaxHidden);
  if (v.given("model.dense_layers")) m.dense_layers = v.integer("model.dense_layers", 0);
  if (v.given("model.moe_layer_step")) m.moe_layer_step = v.integer("model.moe_layer_step", 1);
  if (v.given("model.moe_groups")) m.moe_groups = v.integer("model.moe_groups", 1, limits::kMaxHidden);
  if (v.given("model.moe_topk_groups")) m.moe_topk_groups = v.integer("model.moe_topk_groups", 1, limits::kMaxHidden);
  if (v.given("model.sliding_window")) m.sliding_window = v.integer("model.sliding_window", 0);
  if (v.given("model.sliding_window_pattern")) {
    m.sliding_window_pattern = v.integer("model.sliding_window_pattern", 0);
    if (m.sliding_window_pattern == 1)
      throw InputError(fmt::format("{}: model.sliding_window_pattern = 1 would leave no sliding layer: valid values "
                                   "are 0 (every layer slides) or N >= 2 (the first N - 1 of every N layers); for "
                                   "no sliding window set model.sliding_window = 0", v.source()));
    if (m.sliding_window == 0)
      throw InputError(fmt::format("{}: model.sliding_window_pattern = {} needs model.sliding_window >= 1 (the "
                                   "window, tokens)", v.source(), m.sliding_window_pattern));
  }
  if (v.given("model.mtp_layers")) m.mtp_layers = v.integer("model.mtp_layers", 0, m.layers);
  if (m.is_moe()) {
    if (m.active_experts < 1 || m.active_experts > m.experts)
      throw InputError(fmt::format("{}: model.active_experts = {}: must be between 1 and model.experts = {}",
                                   v.source(), m.active_experts, m.experts));
    if (m.expert_ffn_hidden < 1)
      throw InputError(fmt::format("{}: model.expert_ffn_hidden is required (>= 1) when model.experts = {}",
                                   v.source(), m.experts));
    if (m.dense_layers >= m.layers)
      throw InputError(fmt::format("{}: model.dense_layers = {}: must be below model.layers = {} (at least one MoE "
                                   "layer)", v.source(), m.dense_layers, m.layers));
    if (m.moe_layer_step > m.layers - m.dense_layers)
      throw InputError(fmt::format("{}: model.moe_layer_step = {}: must be at most model.layers - model.dense_layers "
                                   "= {} (at least one MoE layer)", v.source(), m.moe_layer_step,
                                   m.layers - m.dense_layers));
  }
  if (m.head_dim == 0 && m.hidden % m.heads != 0)
    throw InputError(fmt::format("{}: model.hidden = {} is not divisible by model.heads = {}; give model.head_dim "
                                 "when a head is not hidden / heads wide", v.source(), m.hidden, m.heads));
  if (m.q_dim() > limits::kMaxHidden)
    throw InputError(fmt::format("{}: model.heads = {} x model.head_dim = {} = {:.0f}: the attention width must be at "
                                 "most {}", v.source(), m.heads, m.head_dim, m.q_dim(), limits::kMaxHidden));
  if (m.kv_heads > m.heads || (m.kv_heads > 0 && m.heads % m.kv_heads != 0))
    throw InputError(fmt::format("{}: model.kv_heads = {} must divide model.heads = {}", v.source(), m.kv_heads, m.heads));
  if (!(m.total_params() <= limits::kMaxParams))
    throw InputError(fmt::format("{}: model.layers = {}, model.hidden = {}, model.ffn_hidden = {}, model.vocab = {} "
                                 "make {:.3g} parameters: at most {:.0e} can be simulated",
                                 v.source(), m.layers, m.hidden, m.ffn_or_default(), m.vocab, m.total_params(),
                                 limits::kMaxParams));
  return m;
}

std::vector<int> read_int_list(const Values& v, const char* key) {
  std::vector<int> out;
  std::stringstream in(v.text(key));
  std::string item;
  while (std::getline(in, item, ',')) {
    int n = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    // 0 passes here: validate_plan says which stages may be empty (DualPipeV's rank 0).
    if (ec != std::errc() || ptr != item.data() + item.size() || n < 0)
      throw InputError(fmt::format("{}: {} = '{}': '{}' is not a whole number of layers; give e.g. 5,6,6,5",
                                   v.source(), key, v.text(key), item));
    out.push_back(n);
  }
  return out;
}

// A factor of cluster.slow_gpus or cluster.degraded_links: a finite number > 0.
double read_factor(const Values& v, const char* key, const std::string& item, const std::string& text) {
  std::size_t used = 0;
  double f = 0;
  try {
    f = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(f) || f < limits::kMinFactor || f > limits::kMaxFactor)
    throw InputError(fmt::format("{}: {} = '{}': in '{}', factor '{}' must be a number from {} to {}", v.source(), key,
                                 v.text(key), item, text, limits::kMinFactor, limits::kMaxFactor));
  return f;
}

// Comma-separated NAME:FACTOR items; the name is everything before the last ':'.
template <class F>
void for_each_factor(const Values& v, const char* key, const char* example, F&& f) {
  std::stringstream in(v.text(key));
  std::string item;
  while (std::getline(in, item, ',')) {
    const std::size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0)
      throw InputError(fmt::format("{}: {} = '{}': item '{}' is not NAME:FACTOR; give e.g. {}", v.source(), key,
                                   v.text(key), item, example));
    f(item, item.substr(0, colon), read_factor(v, key, item, item.substr(colon + 1)));
  }
}

std::vector<GpuFactor> read_slow_gpus(const Values& v) {
  std::vector<GpuFactor> out;
  for_each_factor(v, "cluster.slow_gpus", "17:0.8,301:0.9", [&](const std::string& item, const std::string& name, double f) {
    int gpu = 0;
    auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), gpu);
    if (ec != std::errc() || ptr != name.data() + name.size() || gpu < 0)
      throw InputError(fmt::format("{}: cluster.slow_gpus = '{}': in '{}', '{}' is not a GPU index (0, 1, ...)",
                                   v.source(), v.text("cluster.slow_gpus"), item, name));
    out.push_back(GpuFactor{gpu, f});
  });
  return out;
}

std::vector<LinkFactor> read_degraded_links(const Values& v) {
  std::vector<LinkFactor> out;
  for_each_factor(v, "cluster.degraded_links", "node3.nic0--tor1:0.5",
                  [&](const std::string& item, const std::string& name, double f) {
                    const std::size_t sep = name.find("--");
                    if (sep == std::string::npos || sep == 0 || sep + 2 >= name.size())
                      throw InputError(fmt::format(
                          "{}: cluster.degraded_links = '{}': in '{}', '{}' is not DEVICE--DEVICE", v.source(),
                          v.text("cluster.degraded_links"), item, name));
                    out.push_back(LinkFactor{name.substr(0, sep), name.substr(sep + 2), f});
                  });
  return out;
}

TraceDetail parse_trace_detail(const std::string& text, const std::string& source, const char* key) {
  if (text == "summary") return TraceDetail::summary;
  if (text == "stages") return TraceDetail::stages;
  if (text == "full" || text == "all") return TraceDetail::all;
  throw InputError(fmt::format("{}: {} = '{}': valid values are summary, stages, full (or all)", source, key, text));
}

}  // namespace

std::string_view trace_detail_name(TraceDetail d) {
  return d == TraceDetail::summary ? "summary" : d == TraceDetail::stages ? "stages" : "full";
}


namespace {

// Stores the keys of `in` (the text of file `name`) into `vm` (values already there take
// precedence). The [sweep] section's lines go to `sweep_lines` when it is given, and are refused
// otherwise.
void store_stream(std::istream& in, const std::string& name, po::variables_map& vm,
                  std::vector<SweepLine>* sweep_lines) {
  try {
    const po::options_description keys = scenario_options();  // `parsed` refers to it
    const po::parsed_options parsed = po::parse_config_file(in, keys, true);
    for (const po::option& o : parsed.options) {
      if (!o.unregistered) continue;
      if (o.string_key.rfind("sweep.", 0) != 0)
        throw InputError(fmt::format("{}: unknown key '{}'{}; run 'dtsim run --help' for the valid keys", name,
                                     o.string_key, did_you_mean(o.string_key, scenario_key_names())));
      if (sweep_lines == nullptr)
        throw InputError(fmt::format("{}: has a [sweep] section ({}): run it with 'dtsim sweep {}'; 'dtsim run' "
                                     "simulates one point, given with --section.key=value",
                                     name, o.string_key.substr(6), name));
      sweep_lines->push_back({o.string_key.substr(6), o.value.empty() ? "" : o.value.front()});
    }
    po::store(parsed, vm);
  } catch (const po::error& e) {
    throw InputError(fmt::format("{}: {}", name, e.what()));
  }
}

void store_file(const std::string& path, po::variables_map& vm, std::vector<SweepLine>* sweep_lines) {
  if (path.empty()) return;
  // A directory, a FIFO or a device would read as an empty file (the defaults) or block.
  std::ifstream file = open_input_file(path, "a scenario .ini file");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::istringstream in(text);
  store_stream(in, path, vm, sweep_lines);  // unknown keys and bad lines first
  // A file says what it simulates: no model or machine is taken from the built-in BLOOM unsaid.
  for (const char* section : {"model", "cluster"}) {
    const std::regex header(fmt::format(R"((^|\n)[ \t]*\[{}\][ \t]*(\r?\n|$))", section));
    if (!std::regex_search(text, header))
      throw InputError(fmt::format("{}: has no [{}] section: a scenario file names its model ([model] name) and its "
                                   "machine ([cluster] gpu, nodes, gpus_per_node); 'dtsim run --template' prints "
                                   "a starting scenario",
                                   path, section));
  }
}

// The built-in default scenario (no file) is scenarios/bloom-176b.ini: BLOOM-176B as BigScience
// trained it, with the Megatron-DeepSpeed profile; a file that names no framework gets the
// training.framework key's default, today's Megatron-Core.
void store_builtin_default(const std::string& path, po::variables_map& vm) {
  if (!path.empty()) return;
  std::istringstream builtin("[training]\nframework = megatron-deepspeed\n[parallel]\ntp = 4\npp = 12\ndp = 8\n");
  store_stream(builtin, "built-in default", vm, nullptr);
}

// An NVL72 rack's own values (topologies/builders.hpp Nvl72Rack) for the cluster keys that the
// file and the command line leave out: GPUs per rack, a NIC per GPU, their rate and kind.
void apply_node_kind_defaults(po::variables_map& vm) {
  if (vm["cluster.node_kind"].as<std::string>() != node_kind_name(NodeKind::nvl72)) return;
  auto fill = [&](const char* key, const std::string& value) {
    if (!vm[key].defaulted()) return;
    vm.erase(key);
    vm.insert({key, po::variable_value(boost::any(value), true)});
  };
  fill("cluster.gpus_per_node", std::to_string(Nvl72Rack::kGpus));
  fill("cluster.nics_per_node", vm["cluster.gpus_per_node"].as<std::string>());
  fill("cluster.nic_gbps", fmt::format("{:g}", Nvl72Rack::kNicGbps));
  fill("cluster.nic_kind", std::string(link_kind_name(Nvl72Rack::kNicKind)));
}

// Every key = value under its [section], in key order; the [inference] keys only for inference.
std::string resolved_text(const po::variables_map& vm, Workload workload = Workload::training) {
  std::string text, section;
  for (const std::string& name : scenario_key_names()) {
    if (workload == Workload::training && inference_key(name)) continue;
    const std::string sec = name.substr(0, name.find('.'));
    if (sec != section) {
      text += fmt::format("{}[{}]\n", section.empty() ? "" : "\n", sec);
      section = sec;
    }
    text += fmt::format("{} = {}\n", name.substr(name.find('.') + 1), vm[name].as<std::string>());
  }
  return text;
}

}  // namespace

std::string resolved_scenario_text(const std::string& path, po::variables_map vm) {
  std::vector<SweepLine> ignored;
  store_file(path, vm, &ignored);
  store_builtin_default(path, vm);
  po::notify(vm);
  apply_framework(vm, path.empty() ? "built-in default" : path);
  apply_node_kind_defaults(vm);
  return resolved_text(vm);
}

std::vector<SweepLine> read_sweep_section(const std::string& path) {
  std::vector<SweepLine> lines;
  po::variables_map vm;
  store_file(path, vm, &lines);
  return lines;
}

namespace {

ServeSetup read_inference(const Values& v) {
  ServeSetup s;
  s.weights = v.parsed([&] { return parse_weight_format(v.text("inference.weights"), "inference.weights"); });
  s.kv = v.parsed([&] { return parse_kv_format(v.text("inference.kv_cache"), "inference.kv_cache"); });
  s.batch = v.integer("inference.batch", 1, kMaxServeBatch);
  s.prompt = v.integer("inference.prompt_tokens", 1, kMaxServeTokens);
  s.output = v.integer("inference.output_tokens", 1, kMaxServeTokens);
  s.cuda_graphs = v.boolean("inference.cuda_graphs");
  s.drafter = v.parsed([&] { return parse_drafter(v.text("inference.speculative"), "inference.speculative"); });
  const bool tokens_given = v.set("inference.speculative_tokens"), acceptance_given = v.set("inference.acceptance");
  if (s.drafter == Drafter::none) {
    if (tokens_given || acceptance_given)
      throw InputError(fmt::format("{}: {} needs inference.speculative = mtp or ngram (it is none)", v.source(),
                                   tokens_given ? "inference.speculative_tokens" : "inference.acceptance"));
    return s;
  }
  s.draft_tokens = v.integer("inference.speculative_tokens", 1, kMaxDraftTokens);
  if (v.text("inference.acceptance") == "auto") {
    if (s.drafter == Drafter::ngram)
      throw InputError(fmt::format("{}: inference.acceptance = auto: n-gram drafts are accepted as often as the text "
                                   "repeats itself; give the rate measured on your prompts (0-1)",
                                   v.source()));
    s.acceptance = kMtpAcceptance;
  } else {
    s.acceptance = v.real("inference.acceptance", 0, 1);
  }
  return s;
}

// A training scenario refuses [inference] keys: they would silently do nothing.
void refuse_inference_keys(const po::variables_map& vm, const std::string& source) {
  for (const std::string& name : scenario_key_names())
    if (inference_key(name) && !vm[name].defaulted())
      throw InputError(fmt::format("{}: {} is a key of dtsim serve (the [inference] section); this command simulates "
                                   "training: run 'dtsim serve {}'",
                                   source, name, source));
}

// A serving scenario refuses the training keys it would ignore: [training] and every [parallel]
// key but the sizes serve splits the model by.
void refuse_training_keys(const po::variables_map& vm, const std::string& source) {
  for (const std::string& name : scenario_key_names()) {
    const bool training = name.rfind("training.", 0) == 0;
    const bool parallel = name.rfind("parallel.", 0) == 0 && name != "parallel.tp" && name != "parallel.pp" &&
                          name != "parallel.dp";
    if ((training || parallel) && !vm[name].defaulted())
      throw InputError(fmt::format("{}: {} is a key of training (dtsim run); dtsim serve reads [model], [cluster], "
                                   "[inference], [output] and parallel.tp, parallel.pp, parallel.dp",
                                   source, name));
  }
}

// load_scenario once the file's keys are stored in `vm`.
Scenario read_scenario(po::variables_map& vm, const std::string& source, Workload workload) {
  Scenario sc;
  sc.source = source;
  try {
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(fmt::format("{}: {}", source, e.what()));
  }
  apply_framework(vm, sc.source);
  apply_node_kind_defaults(vm);
  const Values v(vm, sc.source);
  sc.framework = v.text("training.framework");
  sc.model = read_model(v);
  ParallelPlan& p = sc.plan;
  p.global_batch = v.integer("training.global_batch", 1);
  p.micro_batch = v.integer("training.micro_batch", 1);
  if (const RecipeSpec* recipe = find_recipe(v.text("training.precision"))) {
    sc.precision = recipe->fp4 ? Precision::fp4 : Precision::fp8;
    p.recipe = recipe->recipe;
  } else {
    sc.precision = v.parsed([&] {
      try {
        return parse_precision(v.text("training.precision"), "training.precision");
      } catch (const InputError&) {
        throw InputError(fmt::format("training.precision = '{}': valid values are fp32, tf32, fp16, bf16, {}",
                                     v.text("training.precision"), recipe_names()));
      }
    });
  }
  p.weight_bytes = precision_bytes(sc.precision);
  p.loss_scaling = sc.precision == Precision::fp16;
  p.recompute = v.parsed([&] { return parse_recompute(v.text("training.recompute"), "training.recompute"); });
  p.recompute_modules = v.parsed(
      [&] { return parse_recompute_modules(v.text("training.recompute_modules"), "training.recompute_modules"); });
  p.recompute_num_layers = v.integer("training.recompute_num_layers", 0);
  p.attention = v.parsed([&] { return parse_attention(v.text("training.attention"), "training.attention"); });
  p.dropout = v.boolean("training.dropout");
  p.moe_load_imbalance = v.real("training.moe_load_imbalance", 1, 1e6);
  p.moe_capacity_factor = v.real("training.moe_capacity_factor", 0, 1e6);
  p.fused_kernels = v.boolean("training.fused_kernels");
  p.moment_bytes = v.parsed([&] { return parse_optimizer_moments(v.text("training.optimizer_moments"), "training.optimizer_moments"); });
  p.moe_probs = v.parsed([&] { return parse_moe_probs(v.text("training.moe_probs"), "training.moe_probs"); });
  p.grad_accumulation = v.parsed([&] { return parse_grad_accumulation(v.text("training.grad_accumulation"), "training.grad_accumulation"); });
  p.tp = v.size_or_auto("parallel.tp");
  p.pp = v.size_or_auto("parallel.pp");
  p.dp = v.size_or_auto("parallel.dp");
  p.ep = v.integer("parallel.ep", 1, limits::kMaxGpus);
  p.etp = v.text("parallel.etp") == "tp" ? 0 : v.integer("parallel.etp", 1, limits::kMaxGpus);
  p.cp = v.integer("parallel.cp", 1, limits::kMaxGpus);
  p.cp_comm = v.parsed([&] { return parse_cp_comm(v.text("parallel.cp_comm"), "parallel.cp_comm"); });
  p.zero_stage = v.integer("parallel.zero_stage", 0);
  p.schedule = v.parsed([&] { return parse_schedule(v.text("parallel.schedule"), "parallel.schedule"); });
  p.virtual_stages = v.integer("parallel.virtual_stages", 1);
  p.microbatch_group = v.text("parallel.microbatch_group") == "auto" ? 0 : v.integer("parallel.microbatch_group", 1);
  p.sequence_parallel = v.boolean("parallel.sequence_parallel");
  p.dp_overlap = v.boolean("parallel.dp_overlap");
  p.tp_overlap = v.parsed([&] { return parse_tp_overlap(v.text("parallel.tp_overlap"), "parallel.tp_overlap"); });
  p.moe_shared_expert_overlap = v.boolean("parallel.moe_shared_expert_overlap");
  p.moe_a2a_overlap = v.boolean("parallel.moe_a2a_overlap");
  p.moe_dispatcher = v.parsed([&] { return parse_moe_dispatcher(v.text("parallel.moe_dispatcher"), "parallel.moe_dispatcher"); });
  p.grad_reduce_fp32 = v.boolean("parallel.grad_reduce_fp32");
  p.dp_bucket_bytes = 1e6 * v.real("parallel.dp_bucket_mb", 0.001, 1e6);
  if (v.text("parallel.stage_layers") != "auto") p.stage_layers = read_int_list(v, "parallel.stage_layers");
  p.order = v.parsed([&] { return parse_rank_order(v.text("parallel.rank_order"), "parallel.rank_order"); });

  ClusterConfig& c = sc.cluster;
  c.gpu = v.text("cluster.gpu");
  v.parsed([&] { return find_gpu(c.gpu); });
  c.nodes = v.integer("cluster.nodes", 1, limits::kMaxGpus);
  c.gpus_per_node = v.integer("cluster.gpus_per_node", 1, limits::kMaxGpus);
  p.gpus_per_node = c.gpus_per_node;
  if (static_cast<std::int64_t>(c.nodes) * c.gpus_per_node > limits::kMaxGpus)
    throw InputError(fmt::format("{}: cluster.nodes x cluster.gpus_per_node = {} x {} = {} GPUs: at most {} GPUs "
                                 "can be simulated", sc.source, c.nodes, c.gpus_per_node,
                                 static_cast<std::int64_t>(c.nodes) * c.gpus_per_node, limits::kMaxGpus));
  c.node_kind = v.parsed([&] { return parse_node_kind(v.text("cluster.node_kind"), "cluster.node_kind"); });
  c.nvlink_GBps = v.real("cluster.nvlink_GBps", 0, limits::kMaxLinkGBps);
  if (c.nvlink_GBps > 0 && c.nvlink_GBps < limits::kMinLinkGBps)
    throw InputError(fmt::format("{}: cluster.nvlink_GBps = {}: must be 0 (from the GPU catalog) or between {} and {}",
                                 sc.source, c.nvlink_GBps, limits::kMinLinkGBps, limits::kMaxLinkGBps));
  c.pcie_gen = v.integer("cluster.pcie_gen", 3);
  c.gpus_per_pcie_switch = v.integer("cluster.gpus_per_pcie_switch", 1, limits::kMaxGpus);
  c.cpu_sockets = v.integer("cluster.cpu_sockets", 1);
  c.p2p = v.boolean("cluster.p2p");
  c.nics_per_node = v.integer("cluster.nics_per_node", 1, limits::kMaxGpus);
  c.nic_gbps = v.real("cluster.nic_gbps", limits::kMinNicGbps, limits::kMaxNicGbps);
  c.nic_kind = v.parsed([&] { return parse_link_kind(v.text("cluster.nic_kind"), "cluster.nic_kind"); });
  c.oversubscription = v.real("cluster.oversubscription", 1, 1e6);
  c.spines = v.integer("cluster.spines", 0, 1024);
  c.fabric = v.parsed([&] { return parse_fabric(v.text("cluster.fabric"), "cluster.fabric"); });
  c.gpus_per_tor = v.integer("cluster.gpus_per_tor", 1);
  c.pod_gpus = v.integer("cluster.pod_gpus", 1);
  c.pod_oversubscription = v.real("cluster.pod_oversubscription", 1, 1e6);
  if (!v.text("cluster.nic").empty()) {
    const NicPreset nic = v.parsed([&] { return parse_nic_preset(v.text("cluster.nic"), "cluster.nic"); });
    c.nic_kind = nic.kind;
    c.nic_gbps = nic.gbps;
  }
  sc.protocol = v.parsed([&] { return parse_protocol(v.text("cluster.nccl_protocol"), "cluster.nccl_protocol"); });
  sc.algorithm = v.parsed([&] { return parse_algorithm(v.text("cluster.nccl_algorithm"), "cluster.nccl_algorithm"); });
  sc.nccl_version = v.text("cluster.nccl_version");
  sc.nccl = v.parsed([&] { return &find_nccl_profile(sc.nccl_version, "cluster.nccl_version"); });
  sc.topology_file = v.text("cluster.topology_file");
  sc.slow_gpus = read_slow_gpus(v);
  sc.degraded_links = read_degraded_links(v);
  sc.trace_path = v.text("output.trace");
  sc.trace_detail = v.given("output.detail")
                        ? parse_trace_detail(v.text("output.detail"), sc.source, "output.detail")
                        : parse_trace_detail(v.text("output.trace_detail"), sc.source, "output.trace_detail");

  if (workload == Workload::inference) {
    refuse_training_keys(vm, sc.source);
    sc.inference = read_inference(v);
  } else if (workload == Workload::training) {
    refuse_inference_keys(vm, sc.source);
  }
  sc.resolved_text = resolved_text(vm, workload);
  return sc;
}

}  // namespace

Scenario load_scenario(const std::string& path, po::variables_map vm, SweepSection sweep, Workload workload) {
  std::vector<SweepLine> ignored;
  store_file(path, vm, sweep == SweepSection::accept ? &ignored : nullptr);
  store_builtin_default(path, vm);
  return read_scenario(vm, path.empty() ? "built-in default" : path, workload);
}

Scenario load_scenario_text(const std::string& text, const std::string& name, po::variables_map vm,
                            SweepSection sweep, Workload workload) {
  std::istringstream in(text);
  std::vector<SweepLine> ignored;
  store_stream(in, name, vm, sweep == SweepSection::accept ? &ignored : nullptr);
  return read_scenario(vm, name, workload);
}

void validate_scenario(Scenario& sc, int num_gpus) {
  try {
    const std::string chosen =
        choose_layout(sc.plan, sc.model, find_gpu(sc.cluster.gpu), num_gpus, sc.cluster.gpus_per_node);
    if (!chosen.empty()) {
      sc.chosen = chosen;
      for (const auto& [key, size] : {std::pair{"tp", sc.plan.tp}, {"pp", sc.plan.pp}, {"dp", sc.plan.dp}}) {
        const std::string unset = fmt::format("\n{} = auto\n", key);
        const std::size_t at = sc.resolved_text.find(unset);
        if (at != std::string::npos) sc.resolved_text.replace(at, unset.size(), fmt::format("\n{} = {}\n", key, size));
      }
    }
    validate_plan(sc.plan, sc.model, num_gpus);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", sc.source, e.what()));
  }
  for (const GpuFactor& f : sc.slow_gpus)
    if (f.gpu >= num_gpus)
      throw InputError(fmt::format("{}: cluster.slow_gpus: GPU {} does not exist; the cluster has GPUs 0..{}", sc.source,
                                   f.gpu, num_gpus - 1));
}

}  // namespace dtsim
