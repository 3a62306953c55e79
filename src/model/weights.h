#pragma once
// Qwen3.5 weights bound from a canonical Checkpoint and converted once, at load, into the forms
// the forward reads: matrices for the kernels, f32 vectors for norms and gates. Norm vectors
// hold the multiplier the forward applies, i.e. (1 + w) for zero-centred norms.
#include <memory>
#include <optional>
#include <functional>
#include <string>
#include <vector>

#include "formats/checkpoint.h"
#include "kernels/weight.h"

namespace nextn {

class ThreadPool;

struct ExpertWeights {
    WeightMatrix gate;  // [I_e, H]
    WeightMatrix up;    // [I_e, H]
    WeightMatrix down;  // [H, I_e]
};

struct FfnWeights {
    bool moe = false;
    // dense SwiGLU
    WeightMatrix gate, up;  // [I, H]
    WeightMatrix down;      // [H, I]
    // MoE
    WeightMatrix router;                // [E, H]
    std::vector<ExpertWeights> experts;  // E
    WeightMatrix shared_gate, shared_up;  // [I_s, H]
    WeightMatrix shared_down;             // [H, I_s]
    WeightMatrix shared_expert_gate;      // [1, H]
};

struct LayerWeights {
    bool linear = false;  // Gated DeltaNet (true) or gated full attention
    std::vector<float> input_norm;  // [H], (1+w)
    std::vector<float> post_norm;   // [H], (1+w)
    // Gated DeltaNet
    WeightMatrix in_qkv;           // [conv_dim, H] rows: q (Hk*Dk) | k (Hk*Dk) | v (Hv*Dv)
    WeightMatrix in_z;             // [Hv*Dv, H]
    WeightMatrix in_b;             // [Hv, H]
    WeightMatrix in_a;             // [Hv, H]
    WeightMatrix out_proj;         // [H, Hv*Dv]
    std::vector<float> conv;       // [K, conv_dim] (the checkpoint's [conv_dim, K] transposed for
                                   // KernelTable::causal_conv); tap K-1 multiplies the current token
    std::vector<float> neg_exp_a;  // [Hv], -exp(A_log)
    std::vector<float> dt_bias;    // [Hv]
    std::vector<float> gdn_norm;   // [Dv], plain weight of the gated RMSNorm
    // full attention
    WeightMatrix q_proj;  // [Nq*2*D, H], per head [query D | gate D]
    WeightMatrix k_proj;  // [Nkv*D, H]
    WeightMatrix v_proj;  // [Nkv*D, H]
    WeightMatrix o_proj;  // [H, Nq*D]
    std::vector<float> q_norm, k_norm;  // [D], (1+w)
    FfnWeights ffn;
};

struct MtpWeights {
    bool present = false;
    std::vector<float> pre_fc_norm_embedding;  // [H], (1+w)
    std::vector<float> pre_fc_norm_hidden;     // [H], (1+w)
    std::vector<float> norm;                   // [H], (1+w)
    WeightMatrix fc;                           // [H, 2H], input = [embedding | hidden]
    LayerWeights layer;                        // always full attention
};

struct ModelWeights {
    WeightMatrix embed;     // [V, H]
    WeightMatrix lm_head;   // [V, H]; shares embed's data when tied
    std::vector<float> final_norm;  // [H], (1+w)
    std::vector<LayerWeights> layers;
    MtpWeights mtp;
    std::vector<std::string> unused_tensors;  // canonical names present but not bound
};

struct BindOptions {
    // --quant: the type every matrix is converted to. Native (the default) keeps each tensor's
    // own type where a kernel reads it (F32, BF16, F16, Q8_0, Q4_0, Q4_1, MLX 4-bit as Q4_1,
    // Q5_0 as Q8_0; with int8 activations also Q4_K, Q5_K and Q6_K in 16-row groups with their
    // own scales where the table reads them (Q4_KR, Q5_KR, Q6_KR; else Q4_1FX, Q8_1FX and Q6_KX),
    // and Q5_1 and MLX 2..8-bit as codes with f32 scales) and widens the rest (those types without int8
    // activations) to F32; the values are the same either way.
    WType matrix_type = WType::Native;
    bool load_mtp = true;
    // Block-quantized matrices are repacked to their chunked int8-dot types and multiplied
    // with int8-quantized activations when the kernel table has an int8 dot product
    // (kernels/int8_dot.h): 32 or 64 products per instruction, so decode streams weights at memory
    // speed and prefill runs ~1.5x faster. Off: f32 activations, the arithmetic of a
    // dequantized-f32 reference (each activation is otherwise rounded to 8 bits per 32-value
    // block, as llama.cpp does for these types).
    bool int8_activations = true;
    // BF16 matrices (a bf16 checkpoint kept native, or --quant bf16) are held as BF16D and
    // multiplied with activations rounded to bf16 by the CPU's bf16 dot product, when the kernel
    // table has one (AVX512_BF16; kernels/bf16_dot.h): prefill 1.5-1.7x faster on Zen 4. Off (the
    // default): f32 activations, the arithmetic the golden fixtures' tolerances are for.
    bool bf16_activations = false;
    // Converts each matrix's rows on this pool (load time on a big checkpoint), when given.
    ThreadPool* pool = nullptr;
    // Called after each tensor is bound with the checkpoint bytes bound so far and the total of
    // all its tensors' bytes, and once more with done == total at the end.
    std::function<void(size_t done, size_t total)> progress;
    // Binding first checks that the matrices fit: at least the bytes they are converted to (the
    // file's bytes for Native) against this budget, or, when unset, MemAvailable + SwapFree.
    // Tests set it to exercise the error.
    std::optional<size_t> memory_budget;
};

// A lower bound on the bytes the checkpoint's matrices take once bound with `options`: every
// two-dimensional tensor but the conv taps, at its converted row size (its file bytes when
// the type is kept, or what it grows to: GGUF Q2_K, Q3_K and IQ4_XS, and with f32 activations
// the K-quants, Q5_1, IQ4_NL and MXFP4).
size_t bound_matrix_bytes_at_least(const Checkpoint& ck, const BindOptions& options);

// The type a matrix of type t is kept in for this machine's kernels: its int8-dot type when
// int8_activations is set and the kernel table has int8-dot kernels (Q4_0, Q8_0 in 16-row groups
// where the table reads those, else chunked); BF16D for BF16 when bf16_activations is set and the
// table has the bf16 dot product; else t.
WType kernel_storage_type(WType t, bool int8_activations, bool bf16_activations = false);
// Whether int8_activations takes effect here (the kernel table has int8-dot kernels).
bool int8_kernels_in_use(bool int8_activations);
// Whether bf16_activations takes effect here (the kernel table has the bf16 dot product).
bool bf16_dot_in_use(bool bf16_activations);

// Calls f on every weight matrix of the trunk, the LM head and the MTP head (the embedding only
// when it is not the tied LM head); empty ones are skipped.
void for_each_matrix(const ModelWeights& w, const std::function<void(const WeightMatrix&)>& f);
// The same for changing them; a tied embedding is visited too.
void for_each_matrix(ModelWeights& w, const std::function<void(WeightMatrix&)>& f);

// Moves every converted matrix under 2 MiB (the MoE experts, small projections) into one
// buffer on transparent huge pages, in visiting order. Decode streams thousands of such
// matrices per token; alone, each took its own 4 KiB pages, and a TLB miss every 4 KiB
// held a 35B-A3B MoE's decode to a fraction of the memory bandwidth. Matrices mapped from the
// checkpoint file are left where they are; views of the same bytes stay shared.
void pack_small_matrices(ModelWeights& w);

// A depthwise conv weight [channels, K] (checkpoint order) as [K, channels] (the kernel's).
std::vector<float> conv_taps_first(const std::vector<float>& w, int64_t channels, int K);

// Binds and converts every tensor; throws Error naming the tensor on a missing tensor or a
// wrong shape.
ModelWeights bind_weights(const Checkpoint& ck, const BindOptions& options);

}  // namespace nextn
