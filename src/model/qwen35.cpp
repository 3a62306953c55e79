#include "model/qwen35.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"
#include "model/ops.h"

namespace nextn {

namespace {

ModelWeights with_small_matrices_packed(ModelWeights w) {
    pack_small_matrices(w);
    return w;
}

}  // namespace

Qwen35Model::Qwen35Model(ModelConfig config, ModelWeights weights, ThreadPool& pool)
    : config_(std::move(config)),
      weights_(with_small_matrices_packed(std::move(weights))),
      pool_(pool),
      base_kernels_(&kernels()),
      kernels_(base_kernels_),
      chooser_(base_kernels_, base_kernels_->timed_alternative),
      draft_chooser_(base_kernels_, base_kernels_->timed_alternative),
      rope_inv_freq_(ops::rope_inv_freq(config_.rotary_dims, config_.rope_theta)),
      draft_lm_head_(weights_.lm_head) {}

const char* mtp_input_name(MtpInput m) {
    return m == MtpInput::PreNorm ? "pre-norm" : "post-norm";
}

MtpInput parse_mtp_input(const std::string& name) {
    if (name == "post-norm") return MtpInput::PostNorm;
    if (name == "pre-norm") return MtpInput::PreNorm;
    fail("unknown MTP input '", name, "' (supported: post-norm, pre-norm)");
}

void Qwen35Model::set_draft_head(int64_t vocab, WType type) {
    const WeightMatrix& full = weights_.lm_head;
    if (vocab < 0) fail("draft vocabulary size ", vocab, " is negative");
    if (vocab == 0 || vocab > full.rows) vocab = full.rows;
    if (type == WType::Native || type == full.type) {
        draft_lm_head_ = full;  // the first `vocab` rows of the LM head, shared
        draft_lm_head_.rows = vocab;
        return;
    }
    if (is_int8_dot_type(type)) {  // built in its block type, then repacked
        set_draft_head(vocab, int8_dot_block_source(type, "draft head"));
        if (draft_lm_head_.type != type) draft_lm_head_ = repack_for_int8_dot(draft_lm_head_, type);
        return;
    }
    // Converted in blocks of rows so the f32 staging buffer stays small for a 248k x H head.
    const int64_t H = full.cols, block = 1024;
    const size_t row_bytes = wtype_row_bytes(type, H);
    if (row_bytes == 0) fail("draft head type ", wtype_name(type), " cannot hold rows of ", H);
    const std::string what = std::to_string(vocab) + "-token draft LM head";
    require_weight_memory(size_t(vocab) * row_bytes, what);
    std::shared_ptr<void> owner = allocate_weight_memory(size_t(vocab) * row_bytes, what);
    auto* bytes = static_cast<uint8_t*>(owner.get());
    std::vector<float> rows(size_t(block * H));  // [block, H] staging
    for (int64_t r0 = 0; r0 < vocab; r0 += block) {
        const int64_t n = std::min(block, vocab - r0);
        for (int64_t r = 0; r < n; ++r) weight_row_f32(full, r0 + r, rows.data() + r * H);
        WeightMatrix part = make_weight_f32(rows.data(), n, H, type);
        std::memcpy(bytes + size_t(r0) * row_bytes, part.data, part.nbytes());
    }
    draft_lm_head_.type = type;
    draft_lm_head_.rows = vocab;
    draft_lm_head_.cols = H;
    draft_lm_head_.row_bytes = row_bytes;
    draft_lm_head_.data = bytes;
    draft_lm_head_.owner = std::move(owner);
}

SequenceState Qwen35Model::new_state(int64_t max_positions, int max_width) const {
    const ModelConfig& c = config_;
    SequenceState s;
    s.max_positions = max_positions;
    s.max_width = std::max(1, max_width);
    auto make_attention = [&](AttentionCache& a) {
        a = AttentionCache(max_positions, c.n_kv_heads, c.head_dim, kv_cache_type_);
    };
    s.attention.resize(size_t(c.n_layers));
    s.recurrent.resize(size_t(c.n_layers));
    for (int i = 0; i < c.n_layers; ++i) {
        if (c.is_linear[i]) {
            RecurrentState& r = s.recurrent[size_t(i)];
            r.state_size = int64_t(c.gdn_v_heads) * c.gdn_k_dim * c.gdn_v_dim;
            r.slots = ZeroPagesBuffer(size_t(2 * r.state_size));
            const auto width = size_t(s.max_width);
            r.conv_state_size = int64_t(c.conv_kernel - 1) * c.gdn_conv_dim();
            r.conv_window.assign(size_t(r.conv_state_size) + width * size_t(c.gdn_conv_dim()), 0.0f);
            r.pending_q.assign(width * size_t(c.gdn_key_dim()), 0.0f);
            r.pending_k.assign(r.pending_q.size(), 0.0f);
            r.pending_v.assign(width * size_t(c.gdn_value_dim()), 0.0f);
            r.pending_g.assign(width * size_t(c.gdn_v_heads), 0.0f);
            r.pending_beta.assign(r.pending_g.size(), 0.0f);
        } else {
            make_attention(s.attention[size_t(i)]);
        }
    }
    if (has_mtp()) make_attention(s.mtp_attention);
    return s;
}

void Qwen35Model::logits(const float* hidden, int64_t n, float* out) const {
    matmul(*kernels_, weights_.lm_head, hidden, n, out, pool_);
}

void Qwen35Model::decoder_layer(const LayerWeights& lw, AttentionCache* attn,
                                RecurrentState* rec, ForwardScratch& s, float* x, int64_t T,
                                int64_t pos0, bool keep_open) const {
    const int64_t H = config_.hidden_size;
    float* xn = ForwardScratch::take(s.xn, size_t(T * H));    // [T, H]
    float* out = ForwardScratch::take(s.out, size_t(T * H));  // [T, H]
    over_positions(T, H, [&](int64_t t0, int64_t t1) {
        kernels_->rmsnorm(x + t0 * H, lw.input_norm.data(), t1 - t0, H, config_.rms_eps,
                          xn + t0 * H);
    });
    if (lw.linear) {
        gated_deltanet(lw, *rec, s, xn, T, keep_open, out);
    } else {
        attention(lw, *attn, s, xn, T, pos0, out);
    }
    // The residual add and the next norm, a position at a time.
    over_positions(T, H, [&](int64_t t0, int64_t t1) {
        ops::add_in_place(x + t0 * H, out + t0 * H, (t1 - t0) * H);
        kernels_->rmsnorm(x + t0 * H, lw.post_norm.data(), t1 - t0, H, config_.rms_eps,
                          xn + t0 * H);
    });
    ffn(lw.ffn, s, xn, T, out);
    over_positions(T, H, [&](int64_t t0, int64_t t1) {
        ops::add_in_place(x + t0 * H, out + t0 * H, (t1 - t0) * H);
    });
}

template <class Body>
void Qwen35Model::run_timed(KernelChooser& chooser, int64_t T, int64_t n_logits,
                            Body&& body) const {
    struct RestoreBase {
        const KernelTable*& active;
        const KernelTable* base;
        ~RestoreBase() { active = base; }
    } restore{kernels_, base_kernels_};
    const bool timed = chooser.timed(T, n_logits);
    if (timed) kernels_ = &chooser.pick(T, n_logits);
    const auto start = std::chrono::steady_clock::now();
    body();
    if (timed) {
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
        chooser.record(T, n_logits, took.count());
    }
}

void Qwen35Model::forward(SequenceState& state, const int32_t* tokens, int64_t T,
                          const ForwardOutputs& out, bool keep_open) const {
    if (T <= 0) return;
    if (state.uncommitted) fail("forward: the previous verify forward was not committed");
    if (state.n_past + T > state.max_positions)
        fail("sequence of ", state.n_past + T, " tokens exceeds the context size ",
             state.max_positions);
    if (keep_open && T > state.max_width)
        fail("verify width ", T, " exceeds the rollback capacity ", state.max_width);
    if (out.n_logits > T) fail("forward: n_logits ", out.n_logits, " > tokens ", T);
    // A forward narrow enough to time runs on the chooser's pick (model/kernel_chooser.h).
    run_timed(chooser_, T, out.logits ? out.n_logits : 0,
              [&] { trunk(state, tokens, T, out, keep_open); });
}

void Qwen35Model::trunk(SequenceState& state, const int32_t* tokens, int64_t T,
                        const ForwardOutputs& out, bool keep_open) const {
    const ModelConfig& c = config_;
    const int64_t H = c.hidden_size;
    ForwardScratch& s = state.scratch;
    float* x = ForwardScratch::take(s.x, size_t(T * H));  // [T, H] residual stream
    for (int64_t t = 0; t < T; ++t) {
        if (tokens[t] < 0 || tokens[t] >= c.vocab_size)
            fail("token id ", tokens[t], " is outside the vocabulary [0, ", c.vocab_size, ")");
        weight_row_f32(weights_.embed, tokens[t], x + t * H);
    }
    for (int i = 0; i < c.n_layers; ++i)
        decoder_layer(weights_.layers[size_t(i)], &state.attention[size_t(i)],
                      &state.recurrent[size_t(i)], s, x, T, state.n_past, keep_open);
    // Final norm; the normed hidden is the LM-head input and (post-norm) the MTP head's input.
    if (out.hidden && mtp_input_ == MtpInput::PreNorm)
        std::memcpy(out.hidden, x, size_t(T * H) * sizeof(float));
    kernels_->rmsnorm(x, weights_.final_norm.data(), T, H, c.rms_eps, x);
    if (out.hidden && mtp_input_ == MtpInput::PostNorm)
        std::memcpy(out.hidden, x, size_t(T * H) * sizeof(float));
    if (out.logits && out.n_logits > 0) logits(x + (T - out.n_logits) * H, out.n_logits, out.logits);
    state.n_past += T;
    if (keep_open) state.uncommitted = T;
}

void Qwen35Model::commit(SequenceState& state, int64_t n_keep) const {
    const int64_t T = state.uncommitted;
    if (T == 0) fail("commit: no verify forward to commit");
    if (n_keep < 0 || n_keep > T) fail("commit: keep ", n_keep, " of ", T, " positions");
    state.n_past -= T - n_keep;
    state.uncommitted = 0;
    if (n_keep == 0) return;  // the current slot and conv state describe the state before it
    const ModelConfig& c = config_;
    const int64_t C = c.gdn_conv_dim(), Km1 = c.conv_kernel - 1;
    for (auto& r : state.recurrent) {
        if (!r.state_size) continue;
        // The spare slot holds the state after all T positions; for fewer, the recurrence
        // re-runs over the kept ones (same kernel, same inputs: the same bits).
        if (n_keep < T) {
            float* discard = ForwardScratch::take(state.scratch.o, size_t(n_keep * c.gdn_value_dim()));
            gdn_recurrence(*kernels_, r.state(), r.spare(), 0, r.pending_q.data(), r.pending_k.data(),
                           r.pending_v.data(), r.pending_g.data(), r.pending_beta.data(), n_keep,
                           c.gdn_k_heads, c.gdn_v_heads, c.gdn_k_dim, c.gdn_v_dim,
                           c.gdn_tiled_heads, discard, pool_);
        }
        r.current = 1 - r.current;
    }
    // conv state = last K-1 rows of [old conv state; kept qkv rows], which are rows
    // [n_keep, n_keep + K-1) of the window: moved to the front, the layers side by side on the
    // pool (in one thread these copies were a serial stretch of every verify round).
    pool_.run(int64_t(state.recurrent.size()), [&](int64_t l0, int64_t l1) {
        for (int64_t l = l0; l < l1; ++l) {
            RecurrentState& r = state.recurrent[size_t(l)];
            if (!r.state_size) continue;
            std::memmove(r.conv_window.data(), r.conv_window.data() + n_keep * C,
                         size_t(Km1 * C) * sizeof(float));
        }
    });
}

void Qwen35Model::mtp_forward(SequenceState& state, const float* hidden, const int32_t* tokens,
                              int64_t T, int64_t pos0, const ForwardOutputs& out) const {
    if (!weights_.mtp.present) fail("this model has no MTP head");
    if (pos0 < 0 || pos0 + T > state.mtp_attention.capacity)
        fail("MTP positions [", pos0, ", ", pos0 + T, ") exceed the context size ",
             state.mtp_attention.capacity);
    run_timed(draft_chooser_, T, out.logits ? out.n_logits : 0,
              [&] { mtp_head(state, hidden, tokens, T, pos0, out); });
}

void Qwen35Model::mtp_head(SequenceState& state, const float* hidden, const int32_t* tokens,
                           int64_t T, int64_t pos0, const ForwardOutputs& out) const {
    const ModelConfig& c = config_;
    const MtpWeights& m = weights_.mtp;
    const int64_t H = c.hidden_size;
    ForwardScratch& s = state.scratch;
    float* cat = ForwardScratch::take(s.mtp_cat, size_t(T * 2 * H));  // [T, 2H] = [emb | hidden]
    float* x = ForwardScratch::take(s.x, size_t(T * H));              // [T, H]
    for (int64_t t = 0; t < T; ++t) {
        if (tokens[t] < 0 || tokens[t] >= c.vocab_size)
            fail("token id ", tokens[t], " is outside the vocabulary [0, ", c.vocab_size, ")");
        float* row = cat + t * 2 * H;
        weight_row_f32(weights_.embed, tokens[t], row);
        kernels_->rmsnorm(row, m.pre_fc_norm_embedding.data(), 1, H, c.rms_eps, row);
        kernels_->rmsnorm(hidden + t * H, m.pre_fc_norm_hidden.data(), 1, H, c.rms_eps, row + H);
    }
    matmul(*kernels_, m.fc, cat, T, x, pool_);
    decoder_layer(m.layer, &state.mtp_attention, nullptr, s, x, T, pos0, false);
    if (out.hidden && mtp_input_ == MtpInput::PreNorm)
        std::memcpy(out.hidden, x, size_t(T * H) * sizeof(float));
    kernels_->rmsnorm(x, m.norm.data(), T, H, c.rms_eps, x);
    if (out.hidden && mtp_input_ == MtpInput::PostNorm)
        std::memcpy(out.hidden, x, size_t(T * H) * sizeof(float));
    if (out.logits && out.n_logits > 0)
        matmul(*kernels_, draft_lm_head_, x + (T - out.n_logits) * H, out.n_logits, out.logits, pool_);
}

void apply_model_options(Qwen35Model& model, const ModelOptions& options) {
    model.set_mtp_input(options.mtp_input);
    model.set_kv_cache_type(options.kv_cache_type);
    if (!model.has_mtp()) return;
    const ModelWeights& w = model.weights();
    int64_t vocab = options.draft_vocab;
    if (vocab < 0) vocab = w.lm_head.rows > kAutoDraftVocab ? kAutoDraftVocab : 0;
    WType type = WType::Native;
    if (options.draft_head_type) {
        type = *options.draft_head_type;
    } else {
        const WType t = w.lm_head.type;
        const bool float_head = t == WType::F32 || t == WType::BF16 || t == WType::BF16D || t == WType::F16;
        if (float_head && wtype_row_bytes(WType::Q8_0, w.lm_head.cols) != 0) type = WType::Q8_0;
    }
    if (type != WType::Native)
        type = kernel_storage_type(type, options.int8_activations, options.bf16_activations);
    model.set_draft_head(vocab, type);
}

LoadedModel load_model(const std::string& path, const ModelOptions& options) {
    // The K-quant --quant values (no checkpoint is requantized to them: a file of that type loads
    // as it is).
    const char* synthetic_only = options.q4_k_m ? "q4_k_m" : options.matrix_type == WType::Q2_KR ? "q2_k" : nullptr;
    if (synthetic_only)
        fail("--quant ", synthetic_only, " builds synthetic models (nextn bench --synthetic NAME); a checkpoint is not "
             "requantized to it: a GGUF file of that type loads as it is (--quant native)");
    LoadedModel lm;
    LoadOptions lo;
    lo.load_mtp = options.load_mtp;
    lo.draft_model = options.draft_model;
    lm.checkpoint = load_checkpoint(path, lo);
    lm.checkpoint.config.gdn_tiled_heads = lm.checkpoint.gdn_tiled_heads;
    lm.pool = std::make_unique<ThreadPool>(options.threads);
    BindOptions bo;
    bo.load_mtp = options.load_mtp;
    bo.matrix_type = options.matrix_type;
    bo.int8_activations = options.int8_activations;
    bo.bf16_activations = options.bf16_activations;
    bo.pool = lm.pool.get();
    bo.progress = options.load_progress;
    ModelWeights w = bind_weights(lm.checkpoint, bo);
    lm.model = std::make_unique<Qwen35Model>(lm.checkpoint.config, std::move(w), *lm.pool);
    apply_model_options(*lm.model, options);
    return lm;
}

}  // namespace nextn
