#pragma once
// Synthetic Qwen3.5 models: the real shapes of the released checkpoints (Qwen3.5-0.8B, -2B, -9B,
// -35B-A3B) filled with seeded random weights in memory, so `nextn bench` can measure decode
// speed and MTP speculation at real sizes without downloading a checkpoint.
//
// Values are drawn like an initialised network: matrices uniform with std 1/sqrt(fan_in) (the
// variance of normal * 1/sqrt(fan_in); uniform is PyTorch's default Linear init), norm
// multipliers 1 +- 0.1, A = -exp(A_log) with exp(A_log) in [1, 16] and dt_bias the inverse
// softplus of dt in [1e-3, 1e-1] (HF's Gated DeltaNet init), so the recurrence decays. Each
// tensor has its own seed derived from its canonical name and each row from that, so the
// weights do not depend on the build order or the thread count.
//
// Draft variants bound what MTP speculation can gain:
//   Random:  the head's weights are random, its drafts are (almost) never accepted: the cost
//            of drafting and verifying with nothing gained.
//   Perfect: every draft is accepted (make_draft_perfect below), while every matrix keeps its
//            real shape and is still streamed: the ceiling of depth + 1 tokens per round.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "formats/model_config.h"
#include "kernels/weight.h"
#include "model/qwen35.h"
#include "model/weights.h"

namespace nextn {

enum class SyntheticDraft { None, Random, Perfect };

const char* synthetic_draft_name(SyntheticDraft d);  // "none", "random", "perfect"
// Parses "none" / "random" / "perfect"; throws Error naming the value otherwise.
SyntheticDraft parse_synthetic_draft(const std::string& name);

// Names synthetic_config accepts: qwen3.5-0.8b, qwen3.5-2b, qwen3.5-9b, qwen3.5-35b-a3b.
std::vector<std::string> synthetic_model_names();
// The text-model config of a released checkpoint (vocabulary 248320, one MTP layer); an unknown
// name fails listing the valid ones.
ModelConfig synthetic_config(const std::string& name);

struct SyntheticSize {
    int64_t params = 0;                // every weight value, MTP head included when present
    int64_t routed_expert_params = 0;  // of which in routed experts (MoE; trunk and head)
    size_t bytes = 0;                  // memory of the built weights
};

struct SyntheticOptions {
    // F32, BF16, F16, Q8_0, Q4_0, Q4_1, or Q8_0X / Q4_0X / Q4_1X (built as the block type, then
    // repacked for the int8 kernels); Native means F32.
    WType matrix_type = WType::Q8_0;
    // With q4_k_m the matrices take llama.cpp's Q4_K_M mix instead of matrix_type (q4_k_m_type),
    // each built from the random values through the K-quant encoders (kernels/quant_k.h) and
    // held in these types (Q4_KR or Q4_1FX, Q6_KR or Q6_KX; nextn bench sets them as the engine
    // holds a Q4_K_M file's tensors on the table that runs).
    bool q4_k_m = false;
    WType q4_k_type = WType::Q4_KR;
    WType q6_k_type = WType::Q6_KR;
    SyntheticDraft draft = SyntheticDraft::Random;
    uint64_t seed = 0x5EED;
    // Called on the calling thread after each tensor with the bytes built so far and in all.
    std::function<void(size_t done, size_t total)> progress;
};

// What synthetic_weights would allocate, without building anything (o's types and draft).
SyntheticSize synthetic_size(const ModelConfig& c, const SyntheticOptions& o);
SyntheticSize synthetic_size(const ModelConfig& c, WType type, bool with_mtp);
// The type o.q4_k_m gives matrix `name` (a Hugging Face name: "layers.3.mlp.down_proj.weight",
// "mtp.layers.0.self_attn.v_proj.weight", "lm_head.weight", "embed_tokens.weight") of c.
// llama.cpp's rule for Q4_K_M as it meets Qwen3.5's tensors (llama-quant.cpp at 34af94cd9, the
// issue's commit): the output (with tied embeddings the embedding, which is the output) in Q6_K;
// FFN down (dense, routed and shared experts alike) and the "attention V" tensors in Q6_K where
// use_more_bits(i, n) holds: i < n / 8, i >= 7n / 8, or (i - n / 8) % 3 == 2. For FFN down i is
// the layer's index, n the layers' count (the MTP layer last). llama.cpp counts the Gated
// DeltaNet's fused in_proj_qkv (GGUF attn_qkv) with attention's v_proj, and every layer holds
// one of the two: i is again the layer's index. The MoE routers and the shared-expert gate
// (ffn_gate_inp*) stay F32; the rest is Q4_K. (Checked against the Q4_K_M GGUF fixtures'
// types and llama-quantize's own 0.8B Q4_K_M: tests/model_synthetic_test.cpp.)
WType q4_k_m_type(const ModelConfig& c, const SyntheticOptions& o, const std::string& name);

// Builds every weight of `c` tensor by tensor, each matrix encoded row by row from an f32 row
// buffer, so memory peaks at the final size plus one row per thread (with q4_k_m plus one
// matrix's GGUF blocks: build_weight). With draft Perfect the
// embedding and LM head are also arranged so that the trunk's greedy prediction is always in
// the token range [0, perfect_token_range(c)) with a wide margin (see synthetic.cpp): a draft
// head restricted to a prefix of the vocabulary, or quantized differently, still agrees.
ModelWeights synthetic_weights(const ModelConfig& c, const SyntheticOptions& o, ThreadPool& pool);
int64_t perfect_token_range(const ModelConfig& c);

// Makes any model's MTP head agree with its trunk on every greedy token: zeroes the residual-
// branch outputs of every trunk layer (GDN out_proj, attention o_proj, FFN down, every expert's
// down and the shared expert's down), so the trunk's final hidden is final_norm(embed(token));
// in the head sets the pre-fc norm multipliers to 1, fc = [I | 0] (the embedding half), zeroes
// its o_proj and FFN downs and copies the final norm into mtp.norm. The head's prediction from
// (hidden_t, token_{t+1}) is then the trunk's prediction at position t + 1, up to the rounding
// of one scale factor that the final RMSNorm removes. Matrices keep their shape and type.
// Throws Error when the model has no MTP head. `pool` (optional) parallelises the re-encoding.
void make_draft_perfect(ModelWeights& w, const ModelConfig& c, ThreadPool* pool = nullptr);

// Checks memory, then builds synthetic_config(name) (or `config`) on a pool of `threads`
// (0 = one per core). The checkpoint part holds only the config, format "synthetic", path
// "synthetic:<name>" and mtp_source = the draft variant's name.
LoadedModel load_synthetic_model(const std::string& name, const SyntheticOptions& o, int threads);
LoadedModel load_synthetic_model(const ModelConfig& config, const std::string& name,
                                 const SyntheticOptions& o, int threads);

}  // namespace nextn
