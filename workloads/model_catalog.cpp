// The catalog of published model shapes, each with its source.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "sim/base/error.hpp"
#include "workloads/model.hpp"

namespace dtsim {
namespace {

ModelShape gpt(std::string name, int layers, int hidden, int heads, int vocab = 51200, int seq = 2048) {
  ModelShape m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.vocab = vocab;
  m.seq_len = seq;
  return m;
}

std::vector<ModelShape> make_catalog() {
  std::vector<ModelShape> c;
  // BigScience BLOOM-176B model card: 70 layers, hidden 14336, 112 heads, vocab 250880, seq 2048,
  // ALiBi positions, layer norm after the embedding, tied embeddings. 176,247M parameters.
  ModelShape bloom = gpt("bloom-176b", 70, 14336, 112, 250880, 2048);
  bloom.position = PositionEmbedding::none;
  bloom.embedding_norm = true;
  c.push_back(bloom);
  // Narayanan et al. 2021 Table 1 and Korthikanti et al. 2022 Table 3 (vocab 51200, seq 2048).
  c.push_back(gpt("gpt-1.7b", 24, 2304, 24));
  c.push_back(gpt("gpt-3.6b", 30, 3072, 32));
  c.push_back(gpt("gpt-7.5b", 36, 4096, 32));
  c.push_back(gpt("gpt-18.4b", 40, 6144, 48));
  c.push_back(gpt("gpt-22b", 48, 6144, 64));
  c.push_back(gpt("gpt-39.1b", 48, 8192, 64));
  c.push_back(gpt("gpt-76.1b", 60, 10240, 80));
  c.push_back(gpt("gpt-145.6b", 80, 12288, 96));
  c.push_back(gpt("gpt3-175b", 96, 12288, 96));
  c.push_back(gpt("gpt-310.1b", 96, 16384, 128));
  c.push_back(gpt("gpt-530b", 105, 20480, 128));
  c.push_back(gpt("gpt-1t", 128, 25600, 160));
  // EleutherAI GPT-NeoX-20B (Black et al. 2022): 44 layers, hidden 6144, 64 heads, vocab 50432,
  // rotary positions, untied embeddings; 20.55B parameters.
  ModelShape neox = gpt("gpt-neox-20b", 44, 6144, 64, 50432, 2048);
  neox.position = PositionEmbedding::none;
  neox.tied_embeddings = false;
  neox.parallel_block = true;  // x + attn(ln1(x)) + mlp(ln2(x))
  c.push_back(neox);
  // Meta Llama-2-7B (Touvron et al. 2023): 32 layers, hidden 4096, SwiGLU 11008, vocab 32000,
  // seq 4096, RMS norm (counted as layer norm here), no biases, untied; 6.74B parameters.
  ModelShape llama7 = gpt("llama2-7b", 32, 4096, 32, 32000, 4096);
  llama7.ffn = FfnKind::swiglu;
  llama7.ffn_hidden = 11008;
  llama7.position = PositionEmbedding::none;
  llama7.tied_embeddings = false;
  llama7.bias = false;
  c.push_back(llama7);
  // Meta Llama-2-70B (Touvron et al. 2023): 80 layers, hidden 8192, 64 heads with 8 key/value
  // heads (GQA), SwiGLU 28672, vocab 32000, seq 4096, no biases, untied; 68.98B parameters.
  ModelShape llama70 = llama7;
  llama70.name = "llama2-70b";
  llama70.layers = 80;
  llama70.hidden = 8192;
  llama70.heads = 64;
  llama70.kv_heads = 8;
  llama70.ffn_hidden = 28672;
  c.push_back(llama70);
  // GPT-2 XL class 1.5B used for workstation runs (48 layers, 1600 hidden, 25 heads, vocab 50257,
  // seq 1024, learned positions); 1.56B parameters.
  c.push_back(gpt("gpt2-xl", 48, 1600, 25, 50257, 1024));
  return c;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return out;
}

}  // namespace

const std::vector<ModelShape>& model_catalog() {
  static const std::vector<ModelShape> catalog = make_catalog();
  return catalog;
}

const ModelShape& find_model(std::string_view name) {
  const std::string key = lower(name);
  for (const ModelShape& m : model_catalog())
    if (m.name == key) return m;
  std::string valid;
  for (const ModelShape& m : model_catalog()) valid += (valid.empty() ? "" : ", ") + m.name;
  throw InputError(fmt::format("model.name = '{}': unknown model; valid names: {}, or 'custom' with the shape keys", name, valid));
}

}  // namespace dtsim
