#pragma once
// The Qwen3.5 / Qwen3.6 text model (dense and MoE) and its MTP head, on the CPU in f32.
//
// forward() runs the trunk over a run of tokens at the sequence's next positions; with
// `keep_open` it leaves the run uncommitted so that commit() can keep any prefix of it (the
// speculative verify path). mtp_forward() runs the MTP head over (hidden, next token) pairs.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/sequence_state.h"
#include "core/thread_pool.h"
#include "formats/checkpoint.h"
#include "kernels/kernels.h"
#include "model/kernel_chooser.h"
#include "model/weights.h"

namespace nextn {

// Which trunk hidden state feeds the MTP head (ForwardOutputs::hidden), and which head output a
// chained draft step reads. Engines disagree (see docs/qwen35-architecture §9.2):
//   PostNorm (default; vLLM, SGLang, llama.cpp): the trunk's hidden after the final norm, and
//     the head's output after mtp.norm.
//   PreNorm (MLX PR 990): the residual streams before those norms.
enum class MtpInput { PostNorm, PreNorm };
const char* mtp_input_name(MtpInput m);
// Parses "post-norm" / "pre-norm"; throws Error naming the value otherwise.
MtpInput parse_mtp_input(const std::string& name);

struct ForwardOutputs {
    float* hidden = nullptr;  // [T, H] the hidden the MTP head reads (see MtpInput; optional)
    float* logits = nullptr;  // [n_logits, V] logits of the last n_logits positions (optional)
    int64_t n_logits = 0;
};

class Qwen35Model {
public:
    Qwen35Model(ModelConfig config, ModelWeights weights, ThreadPool& pool);

    const ModelConfig& config() const { return config_; }
    // The kernel table every forward runs on (kernels() by default). A benchmark swaps in a
    // copy with one kernel replaced to time two implementations in one process, token by
    // token (tools/kernel_ab/). `k` must outlive its use; the table must fit the weights'
    // layouts (int8-dot types need int8_dot_fast). Every forward then runs on `k` alone.
    void set_kernels(const KernelTable& k) { set_kernels(k, nullptr); }
    // As set_kernels(k), but forwards up to KernelChooser::kMaxTimedWidth tokens wide are timed
    // on `k` and on `alternative` (which must compute the same bits), and each forward shape
    // runs on the faster (model/kernel_chooser.h). The model starts so on kernels() where that
    // table names a timed_alternative (kernels/kernels.h).
    // The MTP head's steps are timed the same way, apart from the trunk's forwards.
    void set_kernels(const KernelTable& k, const KernelTable* alternative) {
        base_kernels_ = kernels_ = &k;
        chooser_ = KernelChooser(&k, alternative);
        draft_chooser_ = KernelChooser(&k, alternative);
    }
    const KernelTable& kernel_table() const { return *base_kernels_; }
    // The timed trunk forwards and MTP head steps so far: how many ran on the table and how
    // many on its alternative.
    KernelChooser::Counts kernel_choice_counts() const {
        return {chooser_.counts().base + draft_chooser_.counts().base,
                chooser_.counts().alternative + draft_chooser_.counts().alternative};
    }
    bool kernels_timed() const { return chooser_.active(); }
    const ModelWeights& weights() const { return weights_; }
    bool has_mtp() const { return weights_.mtp.present; }
    ThreadPool& pool() const { return pool_; }

    MtpInput mtp_input() const { return mtp_input_; }
    void set_mtp_input(MtpInput m) { mtp_input_ = m; }
    // How new_state's attention caches hold keys and values (f32 by default).
    KvCacheType kv_cache_type() const { return kv_cache_type_; }
    void set_kv_cache_type(KvCacheType t) { kv_cache_type_ = t; }

    // The draft LM head: the MTP head's logits cover the token ids [0, draft_vocab()) only, with
    // the LM head's rows for them held as `type`. Qwen's BPE numbers tokens in merge order, so a
    // prefix of the id range is a frequency-ranked sub-vocabulary. A draft from a subset is still
    // exact: its distribution q is simply zero outside it. vocab >= V (or 0) means the whole
    // vocabulary; WType::Native keeps the LM head's own type (no copy: a view of its rows).
    void set_draft_head(int64_t vocab, WType type);
    int64_t draft_vocab() const { return draft_lm_head_.rows; }
    const WeightMatrix& draft_lm_head() const { return draft_lm_head_; }

    // Fresh caches for sequences of up to max_positions tokens, verify forwards up to max_width.
    SequenceState new_state(int64_t max_positions, int max_width) const;

    // Trunk forward over tokens[0..T) at positions state.n_past... With keep_open (T <=
    // state.max_width) the positions stay uncommitted until commit(); without, they are
    // committed at once.
    void forward(SequenceState& state, const int32_t* tokens, int64_t T, const ForwardOutputs& out,
                 bool keep_open = false) const;
    // Keeps the first n_keep positions of the last keep_open forward and drops the rest
    // (n_keep 0 drops the whole forward: the state is as before it). Keeping some but not all
    // re-runs the Gated-DeltaNet recurrence over the kept positions (cache/sequence_state.h).
    void commit(SequenceState& state, int64_t n_keep) const;

    // MTP head over T pairs: row t pairs trunk hidden[t] (post final norm) with tokens[t] (the
    // token at the next position) at RoPE position pos0 + t, writing MTP KV entries pos0 + t and
    // attending to entries [0, pos0 + t]. hidden_out [T, H] is the head's output after mtp.norm
    // (before it with MtpInput::PreNorm: the input of a chained step); logits
    // [n_logits, draft_vocab()] for the last n_logits rows.
    void mtp_forward(SequenceState& state, const float* hidden, const int32_t* tokens, int64_t T,
                     int64_t pos0, const ForwardOutputs& out) const;

private:
    // forward() and mtp_forward() once their arguments are checked, on kernels_.
    void trunk(SequenceState& state, const int32_t* tokens, int64_t T, const ForwardOutputs& out,
               bool keep_open) const;
    void mtp_head(SequenceState& state, const float* hidden, const int32_t* tokens, int64_t T,
                  int64_t pos0, const ForwardOutputs& out) const;
    void decoder_layer(const LayerWeights& lw, AttentionCache* attn, RecurrentState* rec,
                       ForwardScratch& s, float* x, int64_t T, int64_t pos0, bool keep_open) const;
    void attention(const LayerWeights& lw, AttentionCache& cache, ForwardScratch& s,
                   const float* xn, int64_t T, int64_t pos0, float* out) const;
    void gated_deltanet(const LayerWeights& lw, RecurrentState& rec, ForwardScratch& s,
                        const float* xn, int64_t T, bool keep_open, float* out) const;
    void ffn(const FfnWeights& f, ForwardScratch& s, const float* xn, int64_t T, float* out) const;
    void swiglu(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down,
                ForwardScratch& s, const float* x, int64_t T, float* y) const;
    // g = silu(g) * u over rows [rows, width], split by rows as over_positions splits.
    void swiglu_rows(float* g, const float* u, int64_t rows, int64_t width) const;
    void logits(const float* hidden, int64_t n, float* out) const;
    // Runs body() on the table `chooser` picks for T tokens and n_logits logits rows, and tells
    // the chooser how long it took; kernels_ is base_kernels_ again afterwards, however body ends.
    template <class Body>
    void run_timed(KernelChooser& chooser, int64_t T, int64_t n_logits, Body&& body) const;
    // fn(t0, t1) over positions [0, T) of per-position work (norms, residual adds, activations),
    // on the pool when the T * per_position values are a prefill's (kMinElementwiseParallel),
    // else in this thread (decode, verify). Each position's values are the same bits either way.
    template <class Fn>
    void over_positions(int64_t T, int64_t per_position, Fn&& fn) const {
        if (T * per_position < kMinElementwiseParallel)
            fn(int64_t(0), T);
        else
            pool_.run(T, fn);
    }
    // Values of per-position work worth a pool dispatch: 64 positions of a 1024-wide hidden
    // state, 19 of a 3584-wide FFN (a dispatch costs a few microseconds, BM_PoolDispatch).
    static constexpr int64_t kMinElementwiseParallel = 64 * 1024;

    ModelConfig config_;
    ModelWeights weights_;
    ThreadPool& pool_;
    const KernelTable* base_kernels_;  // kernels() unless set_kernels replaced it
    // The table of the forward running now: base_kernels_, or for a timed forward the chooser's
    // pick (forward() sets it and puts base_kernels_ back, however the forward ends). Forwards
    // on one model run one at a time, as they share its pool.
    mutable const KernelTable* kernels_;
    mutable KernelChooser chooser_;        // the trunk's forwards
    mutable KernelChooser draft_chooser_;  // the MTP head's steps
    std::vector<double> rope_inv_freq_;  // [rotary_dims / 2]
    MtpInput mtp_input_ = MtpInput::PostNorm;
    KvCacheType kv_cache_type_ = KvCacheType::F32;
    WeightMatrix draft_lm_head_;  // [draft_vocab, H]; a view of lm_head by default
};

constexpr int64_t kAutoDraftVocab = 32768;

struct ModelOptions {
    int threads = 0;          // 0: one per core
    bool load_mtp = true;
    std::string draft_model;  // --draft-model
    WType matrix_type = WType::Native;  // --quant (see BindOptions)
    // --quant q4_k_m: synthetic models only (SyntheticOptions::q4_k_m); load_model refuses it.
    bool q4_k_m = false;
    bool int8_activations = true;        // see BindOptions
    bool bf16_activations = false;       // see BindOptions
    MtpInput mtp_input = MtpInput::PostNorm;
    KvCacheType kv_cache_type = KvCacheType::F32;  // --kv-type
    // Draft LM head (Qwen35Model::set_draft_head). The defaults keep the exact full head;
    // the CLI defaults to auto. draft_vocab: 0 = whole vocabulary, -1 = auto (kAutoDraftVocab
    // when the vocabulary is larger, else whole). draft_head_type: Native keeps the LM head's
    // type; nullopt = auto (Q8_0 for f32/bf16/f16 heads, else Native).
    int64_t draft_vocab = 0;
    std::optional<WType> draft_head_type = WType::Native;
    // Load progress (BindOptions::progress): checkpoint bytes converted so far, of the total.
    std::function<void(size_t done, size_t total)> load_progress;
};

// A loaded model with everything it needs alive: checkpoint maps, weights, thread pool.
struct LoadedModel {
    Checkpoint checkpoint;
    std::unique_ptr<ThreadPool> pool;
    std::unique_ptr<Qwen35Model> model;
};

// Applies what ModelOptions sets on a built model: mtp_input, kv_cache_type and the draft LM
// head options (draft_vocab, draft_head_type, int8_activations, bf16_activations). load_model calls it, synthetic
// models too.
void apply_model_options(Qwen35Model& model, const ModelOptions& options);

// The architecture registry: opens any supported checkpoint and builds its model.
LoadedModel load_model(const std::string& path, const ModelOptions& options);

}  // namespace nextn
