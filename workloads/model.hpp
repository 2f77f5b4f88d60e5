// Decoder-only transformer shapes and their parameter counts, plus the catalog of named models.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

enum class FfnKind { gelu, swiglu };            // 2-matrix GeLU MLP or 3-matrix SwiGLU
enum class PositionEmbedding { learned, none };  // none: ALiBi / rotary (no parameters)

struct ModelShape {
  std::string name = "custom";
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;          // 0 = heads (multi-head attention); fewer = GQA/MQA
  int ffn_hidden = 0;        // 0 = 4 x hidden
  FfnKind ffn = FfnKind::gelu;
  int vocab = 0;
  int seq_len = 0;
  bool tied_embeddings = true;
  PositionEmbedding position = PositionEmbedding::learned;
  bool embedding_norm = false;  // a layer norm right after the embedding (BLOOM)
  bool bias = true;             // linear layers carry biases (GPT, BLOOM; not Llama)
  bool parallel_block = false;  // attention and MLP side by side on the layer input (GPT-J/NeoX)

  int kv_heads_or_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  int ffn_or_default() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
  double head_dim() const { return static_cast<double>(hidden) / heads; }
  double kv_dim() const { return head_dim() * kv_heads_or_heads(); }

  double params_per_layer() const;
  double embedding_params() const;   // token (+ position) embeddings
  double head_params() const;        // untied LM head (0 when tied)
  double final_norm_params() const;  // final norm (+ embedding norm)
  double total_params() const;
};

FfnKind parse_ffn_kind(std::string_view text, std::string_view key);
PositionEmbedding parse_position_embedding(std::string_view text, std::string_view key);
std::string_view ffn_kind_name(FfnKind k);
std::string_view position_embedding_name(PositionEmbedding p);

// Named shapes (e.g. "bloom-176b", "gpt3-175b"); throws InputError listing valid names.
const ModelShape& find_model(std::string_view name);
const std::vector<ModelShape>& model_catalog();

}  // namespace dtsim
