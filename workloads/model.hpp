// Decoder-only transformer shapes and their parameter counts (total, and active per token for
// mixture-of-experts models), plus the catalog of named models.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

enum class FfnKind { gelu, swiglu };            // 2-matrix GeLU MLP or 3-matrix SwiGLU
// Learned position embeddings carry parameters; ALiBi biases the attention scores and rotary
// embeddings rotate the queries and keys (a kernel of their own), neither with parameters.
enum class PositionEmbedding { learned, none, alibi, rotary };
// LayerNorm (GPT, BLOOM, MPT) or RMSNorm (Llama, Qwen, DeepSeek); both counted with a gain and a
// bias per channel (an RMSNorm's missing bias is below 0.01 % of any catalog model).
enum class NormKind { layernorm, rmsnorm };

struct ModelShape {
  std::string name = "custom";
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;          // 0 = heads (multi-head attention); fewer = GQA/MQA
  int head_dim = 0;          // per-head query/key/value size; 0 = hidden / heads (Qwen3: 128 apart from it)
  int ffn_hidden = 0;        // 0 = 4 x hidden
  FfnKind ffn = FfnKind::gelu;
  int vocab = 0;
  int seq_len = 0;
  bool tied_embeddings = true;
  PositionEmbedding position = PositionEmbedding::learned;
  NormKind norm = NormKind::layernorm;
  bool embedding_norm = false;  // a layer norm right after the embedding (BLOOM)
  bool bias = true;             // linear layers carry biases (GPT, BLOOM; not Llama)
  bool parallel_block = false;  // attention and MLP side by side on the layer input (GPT-J/NeoX)
  bool qkv_bias = false;        // only the Q, K, V projections carry biases (Qwen2); implied by bias
  // Mixture of experts (DeepSeek-V3/R1): the first dense_layers layers have a dense MLP of
  // ffn_hidden; after them every moe_layer_step-th layer (the last of each group of that many:
  // Llama 4 Maverick's interleave_moe_layer_step 2 makes layers 1, 3, 5, ... MoE) routes each
  // token to active_experts of `experts` routed experts plus shared_experts always-on ones, each a
  // SwiGLU MLP of expert_ffn_hidden, chosen by a router (hidden x experts); the layers between
  // keep the dense MLP. experts = 0: a dense model.
  int experts = 0;
  int active_experts = 0;
  int shared_experts = 0;
  int expert_ffn_hidden = 0;
  int dense_layers = 0;
  int moe_layer_step = 1;
  // Node-limited (group-limited) routing (DeepSeek-V3 report Sec. 2.1.2; its config.json n_group
  // and topk_group, Megatron-Core's --moe-router-num-groups and --moe-router-group-topk): the
  // experts form moe_groups equal groups and each token picks its experts within the
  // moe_topk_groups groups it scores highest, so with one group per node it reaches at most
  // moe_topk_groups nodes. 1 and 1: unlimited.
  int moe_groups = 1;
  int moe_topk_groups = 1;
  // Multi-head latent attention (DeepSeek-V2/V3): queries through a rank-q_lora_rank bottleneck,
  // keys and values from a kv_lora_rank latent plus a shared rope_head_dim rotary key; per head
  // nope_head_dim + rope_head_dim query/key dims and v_head_dim value dims. kv_lora_rank = 0: none.
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int rope_head_dim = 0;
  int nope_head_dim = 0;
  int v_head_dim = 0;
  // Sliding-window attention (Mistral 7B, Gemma 2/3, GPT-OSS; Hugging Face config.json's
  // sliding_window and layer_types): in a sliding layer each query attends to itself and the
  // sliding_window - 1 keys before it. sliding_window_pattern N >= 2: of every N layers the first
  // N - 1 slide and the N-th attends in full (Gemma 3's sliding_window_pattern; GPT-OSS's
  // alternating layer_types, sliding first, is 2); 0: every layer slides. sliding_window = 0: none.
  int sliding_window = 0;
  int sliding_window_pattern = 0;
  // GPT-OSS: the router and every expert's three projections carry biases (2 x expert_ffn_hidden
  // on the fused gate and up projection, hidden on the down projection).
  bool expert_bias = false;
  // Multi-token prediction (DeepSeek-V3 report Sec. 2.2; config.json num_nextn_predict_layers):
  // mtp_layers modules after the main model, module k predicting token i + k + 1 from the hidden
  // state before it and the embedding of token i + k: RMSNorms of both, a projection of their
  // concatenation (2 hidden -> hidden), one transformer block shaped as the model's last layer, and
  // the output head shared with the main model behind a final norm of its own.
  int mtp_layers = 0;
  std::string source;           // where the shape comes from (catalog models)

  int kv_heads_or_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  int ffn_or_default() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
  double head_dim_or_default() const { return head_dim > 0 ? head_dim : static_cast<double>(hidden) / heads; }
  double q_dim() const { return head_dim_or_default() * heads; }          // queries, and the attention output
  double kv_dim() const { return head_dim_or_default() * kv_heads_or_heads(); }

  bool is_moe() const { return experts > 0; }
  bool is_sliding_layer(int layer) const {
    return sliding_window > 0 && (sliding_window_pattern == 0 || (layer + 1) % sliding_window_pattern != 0);
  }
  // Keys one query of `layer` reaches at most: the window in a sliding layer shorter than the
  // sequence, else the whole sequence.
  int attention_span(int layer) const {
    return is_sliding_layer(layer) && sliding_window < seq_len ? sliding_window : seq_len;
  }
  bool is_mla() const { return kv_lora_rank > 0; }
  int moe_layers() const { return is_moe() ? (layers - dense_layers) / moe_layer_step : 0; }
  bool is_moe_layer(int layer) const {
    return is_moe() && layer >= dense_layers && (layer - dense_layers + 1) % moe_layer_step == 0;
  }

  double attention_params() const;   // one layer's attention block (projections, MLA norms)
  double expert_params() const;      // one expert's SwiGLU MLP
  double params_per_layer() const;   // a dense layer: attention + dense MLP + norms
  double moe_layer_params() const;   // an MoE layer: attention + router + all experts + norms
  double moe_layer_active_params() const;  // what one token uses of an MoE layer
  double transformer_params() const; // all layers
  double embedding_params() const;   // token (+ position) embeddings
  double head_params() const;        // untied LM head (0 when tied)
  double final_norm_params() const;  // final norm (+ embedding norm)
  // One multi-token-prediction module: its two input norms, the projection, its block (the last
  // layer's shape) and its final norm; the embedding and the output head are the main model's.
  double mtp_module_params() const;
  // The main model, as published totals count it (DeepSeek-V3's 671B leaves the MTP module out).
  double total_params() const;
  // Parameters one token uses: all but the routed experts it skips and the embedding rows of
  // other tokens (an embedding is a lookup of one row).
  double active_params() const;
  // Elements of the KV cache per token and layer: 2 x kv_heads x head_dim, or with MLA the
  // latent plus the rotary key (kv_lora_rank + rope_head_dim).
  double kv_cache_elements_per_token_layer() const;
};

// (query, key) pairs of causal attention over s tokens where each query reaches at most w keys:
// the sum over positions p = 0 ... s - 1 of min(p + 1, w) = w (w + 1) / 2 + (s - w) w for w < s,
// s (s + 1) / 2 otherwise.
double causal_pairs(double s, double w);

FfnKind parse_ffn_kind(std::string_view text, std::string_view key);
PositionEmbedding parse_position_embedding(std::string_view text, std::string_view key);
NormKind parse_norm_kind(std::string_view text, std::string_view key);
std::string_view norm_kind_name(NormKind n);
std::string_view ffn_kind_name(FfnKind k);
std::string_view position_embedding_name(PositionEmbedding p);

// Named shapes (e.g. "bloom-176b", "gpt3-175b"); throws InputError listing valid names.
const ModelShape& find_model(std::string_view name);
const std::vector<ModelShape>& model_catalog();

}  // namespace dtsim
