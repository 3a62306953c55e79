// The threaded matmul drivers: rows split in 16-row blocks over the pool, int8 (or bf16)
// activations quantized (rounded) once per distinct input.
#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/bf16_dot.h"
#include "kernels/int8_dot.h"
#include "kernels/kernels.h"

namespace nextn {

namespace {

constexpr int64_t kRowBlock = 16;  // rows a thread takes at a time (a block stays in cache)

// Batches no wider than this many columns split their rows into one contiguous range per thread
// (ThreadPool::Split::Contiguous) instead of the guided schedule's shrinking claims: each thread
// then reads each matrix in one call, whose prefetch runs to the end of its range. On the 2-core
// Emerald-Rapids-class Xeon VM, 0.8B forwards alternating between the two schedules in one process,
// contiguous over guided: Q4_0 width 1 0.975-0.983, width 2 0.963, width 4 0.959-0.970, width 8
// 0.960; Q8_0 width 1 0.988-1.019 (median of runs 0.993), width 4 0.985-0.988. Claims from each
// thread's own range first (halving, the rest stolen from the back) gained about half as much (Q4_0
// width 1 0.987-0.993, width 4 0.974). Wider than 8 (prefill) the guided schedule stays: its dot
// products dominate and it balances them (128 columns contiguous: 1.028). AMD's tiles prefetch with
// one cursor per call instead (gemm_row_groups_avx512.cpp), and the split gives them fewer, longer
// calls as well; on Zen 5 the ranges' tails are shared (narrow_split). The caller then waits for
// the worker at the end of a batch for 0.4-1.5 ms a 0.8B Q4_0 token (0.15 ms guided), about 0.2 ms
// of it the worker's later start (1.3 us a batch); which half the caller takes does not change it.
// Splitting the last eighth of each range into shrinking claims, or stealing, to even that out
// measured slower than the one range on this Xeon (0.983-0.991 over guided; Zen 5 gains from it:
// below); an L2 prefetch of a call's first 32 or 64 KB at its start changed nothing (kernel_ab
// 0.998, 0.999). With a third process taking CPU time (a niced busy loop; or 2 ms busy every 20
// ms), where a preempted thread holds its whole range, contiguous still measured 0.980-0.988 of
// guided (Q4_0 width 1, medians and means).
constexpr int64_t kContiguousSplitUpTo = 8;

// Zen 5: the contiguous ranges' shared tails (ThreadPool::Split::ContiguousSharedTails). There
// the two threads of one call finished 1.12-1.13x apart at the median and 1.28-1.37x at the
// 90th percentile, the slower one changing from call to call (a 0.8B Q8_0R matrix, 1 GB of
// copies rotated), and the other waited. 0.8B forwards alternating one by one in one process
// (shared tails over contiguous, median forward times, 2 threads): Q8_0 width 1 0.988, 0.988,
// 0.987; Q4_0 width 1 0.957, 0.982; Q8_0 width 2 0.955, 0.949, width 4 0.918, 0.956, width 8
// 0.897, 0.913; Q4_0 width 4 0.929, 0.912, width 8 0.912, 0.915. A first claim of three
// quarters of each range measured the same as seven eighths (Q8_0 width 1 0.988, 0.990, 0.987;
// width 4 0.924, 0.955). This code against Contiguous, the same way (KernelTable copies with
// the flag on and off): Q8_0 width 1 0.935, Q4_0 0.953, Q8_0 width 4 0.950, Q4_0 0.938.
ThreadPool::Split narrow_split(const KernelTable& k, int64_t widest) {
    if (widest > kContiguousSplitUpTo) return ThreadPool::Split::Guided;
    return k.share_narrow_tails ? ThreadPool::Split::ContiguousSharedTails
                                : ThreadPool::Split::Contiguous;
}

void check_weight(const WeightMatrix& w) {
    if (w.empty() || w.rows <= 0 || w.cols <= 0)
        fail("matmul: empty weight matrix [", w.rows, ", ", w.cols, "]");
    const size_t expect = wtype_row_bytes(w.type, w.cols);
    if (expect == 0 || w.row_bytes < expect)
        fail("matmul: a ", wtype_name(w.type), " weight cannot have ", w.cols, " columns and ",
             w.row_bytes, "-byte rows");
}

// The calling thread's scratch (thread_local: reused across calls, so decode does not allocate
// after warm-up). Take a plain reference before handing it to pool lambdas: inside them the
// name would denote the worker's own copy.
struct BatchScratch {
    std::vector<int64_t> first_block;        // [jobs + 1] prefix sums of 16-row blocks
    std::vector<int> input_of;               // [jobs] index into inputs, -1 for f32 activations
    std::vector<const MatmulJob*> input_job;  // [inputs] the first job reading each input
    std::vector<QuantizedColumns> inputs;    // distinct int8 activation inputs (grows only)
    std::vector<int> bf16_input_of;          // [jobs] index into bf16_inputs, -1 for others
    std::vector<const MatmulJob*> bf16_input_job;  // [bf16 inputs] the first job reading each
    std::vector<Bf16Columns> bf16_inputs;    // distinct bf16-rounded inputs (grows only)
};

// The index of job's input among `firsts` (the first job of each distinct x, n, cols), adding it
// when new.
int input_index(std::vector<const MatmulJob*>& firsts, const MatmulJob& job) {
    int i = 0;
    while (i < int(firsts.size()) &&
           !(firsts[size_t(i)]->x == job.x && firsts[size_t(i)]->n == job.n &&
             firsts[size_t(i)]->w->cols == job.w->cols))
        ++i;
    if (i == int(firsts.size())) firsts.push_back(&job);
    return i;
}

BatchScratch& batch_scratch() {
    thread_local BatchScratch scratch;
    return scratch;
}

// Rows [r0, r1) of one job: q its int8 activations, b its bf16 ones, or neither (f32).
void run_rows(const KernelTable& k, const MatmulJob& job, const QuantizedColumns* q,
              const Bf16Columns* b, int64_t r0, int64_t r1) {
    const WeightMatrix& w = *job.w;
    if (q)
        k.gemm_i8_rows(w, *q, job.y, w.rows, r0, r1);
    else if (b)
        k.gemm_bf16_rows(w, *b, job.y, w.rows, r0, r1);
    else
        k.gemm_rows(w, job.x, job.n, job.y, w.rows, r0, r1);
}

}  // namespace

void matmul(const KernelTable& k, const WeightMatrix& w, const float* x, int64_t n, float* y,
            ThreadPool& pool) {
    const MatmulJob job{&w, x, n, y};
    matmul_batch(k, {&job, 1}, pool);  // a matrix below the threading bound runs in this thread
}

void matmul_shared_input(const KernelTable& k, std::initializer_list<MatmulOutput> outputs,
                         const float* x, int64_t n, ThreadPool& pool) {
    constexpr int kMaxOutputs = 8;
    if (outputs.size() > size_t(kMaxOutputs))
        fail("matmul_shared_input: at most ", kMaxOutputs, " outputs");
    MatmulJob jobs[kMaxOutputs];
    int count = 0;
    for (const MatmulOutput& o : outputs) {
        if (o.w->cols != outputs.begin()->w->cols)
            fail("matmul_shared_input: matrices with ", outputs.begin()->w->cols, " and ",
                 o.w->cols, " columns");
        jobs[count++] = MatmulJob{o.w, x, n, o.y};
    }
    matmul_batch(k, {jobs, size_t(count)}, pool);
}

void matmul_batch(const KernelTable& k, std::span<const MatmulJob> jobs, ThreadPool& pool) {
    BatchScratch& s = batch_scratch();
    const size_t count = jobs.size();
    s.first_block.assign(count + 1, 0);
    s.input_of.assign(count, -1);
    s.input_job.clear();
    s.bf16_input_of.assign(count, -1);
    s.bf16_input_job.clear();
    int64_t work = 0;    // weight values over all jobs
    int64_t widest = 0;  // the most columns of any job
    for (size_t i = 0; i < count; ++i) {
        const MatmulJob& job = jobs[i];
        const int64_t n = std::max<int64_t>(job.n, 0);
        widest = std::max(widest, n);
        s.first_block[i + 1] = s.first_block[i];
        if (n == 0) continue;
        check_weight(*job.w);
        s.first_block[i + 1] += (job.w->rows + kRowBlock - 1) / kRowBlock;
        work += job.w->rows * job.w->cols;
        if (is_int8_dot_type(job.w->type))
            s.input_of[i] = input_index(s.input_job, job);
        else if (job.w->type == WType::BF16D)
            s.bf16_input_of[i] = input_index(s.bf16_input_job, job);
    }
    // bf16 inputs are rounded here, in this thread: one pass over x, a few percent of the
    // products that read it.
    if (s.bf16_inputs.size() < s.bf16_input_job.size()) s.bf16_inputs.resize(s.bf16_input_job.size());
    for (size_t i = 0; i < s.bf16_input_job.size(); ++i) {
        const MatmulJob& job = *s.bf16_input_job[i];
        round_columns_bf16(job.x, job.n, job.w->cols, s.bf16_inputs[i]);
    }

    // Quantize each distinct input: one input splits its columns over the pool (when there are
    // many); several run side by side, one input per call (in this thread when the whole batch
    // is too small to wake the others).
    const size_t n_inputs = s.input_job.size();
    if (s.inputs.size() < n_inputs) s.inputs.resize(n_inputs);
    auto quantize_input = [&](size_t i) {
        const MatmulJob& job = *s.input_job[i];
        resize_columns(job.n, job.w->cols, s.inputs[i]);
        k.quantize_columns(job.x, job.w->cols, s.inputs[i], 0, job.n);
    };
    if (n_inputs == 1) {
        const MatmulJob& job = *s.input_job[0];
        quantize_activations(k, job.x, job.n, job.w->cols, s.inputs[0], pool);
    } else if (work < kMinParallelWork) {
        for (size_t i = 0; i < n_inputs; ++i) quantize_input(i);
    } else {
        pool.run(int64_t(n_inputs), [&](int64_t i0, int64_t i1) {
            for (int64_t i = i0; i < i1; ++i) quantize_input(size_t(i));
        });
    }

    // Blocks of 16 rows over all jobs; a row is always computed by one thread with the same
    // code, so any grouping of blocks (and of jobs) gives the same bits.
    auto run_blocks = [&](int64_t b0, int64_t b1) {
        const auto first = std::upper_bound(s.first_block.begin(), s.first_block.end(), b0);
        for (size_t i = size_t(first - s.first_block.begin()) - 1; i < count && b0 < b1; ++i) {
            const int64_t lo = std::max(b0, s.first_block[i]);
            const int64_t hi = std::min(b1, s.first_block[i + 1]);
            if (lo >= hi) continue;
            const MatmulJob& job = jobs[i];
            const int64_t r0 = (lo - s.first_block[i]) * kRowBlock;
            const int64_t r1 = std::min((hi - s.first_block[i]) * kRowBlock, job.w->rows);
            const int input = s.input_of[i], bf16_input = s.bf16_input_of[i];
            run_rows(k, job, input < 0 ? nullptr : &s.inputs[size_t(input)],
                     bf16_input < 0 ? nullptr : &s.bf16_inputs[size_t(bf16_input)], r0, r1);
        }
    };
    const int64_t blocks = s.first_block[count];
    if (work < kMinParallelWork)
        run_blocks(0, blocks);
    else
        pool.run(blocks, run_blocks, narrow_split(k, widest));
}

}  // namespace nextn
