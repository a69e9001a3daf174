-- kernel_files: one row per kernel (as the benchmark CSVs name it) and file stem of upstream code
-- that kernel runs or is benchmarked by. A file of the upstream repository belongs to a kernel
-- when it lies in `src/liger_kernel/ops/`, `src/liger_kernel/transformers/`,
-- `src/liger_kernel/chunked_loss/` or `benchmark/scripts/` (not in a sub-folder: other hardware's
-- backends are not what the benchmarks run) and its name without `.py` and without a
-- `benchmark_` prefix is one of the kernel's stems (`kernel_file_stem`). A kernel's stems are
-- its own name, `utils` (the shared helpers every kernel and benchmark imports), and the modules
-- it is built on, listed below where the names differ. The `dyt_beta=…` kernels are `dyt`.
--     select kernel, stem from kernel_files where kernel = 'distill_jsd_loss';
-- reads: dim_workload
create or replace view kernel_files as
with built_on(kernel, stem) as (
    values
        ('distill_jsd_loss', 'jsd_loss'),
        ('distill_jsd_loss', 'fused_linear_distillation'),
        ('distill_cosine_loss', 'cosine_similarity_loss'),
        ('distill_cosine_loss', 'fused_linear_distillation'),
        ('dpo_loss', 'fused_linear_preference'),
        ('kto_loss', 'fused_linear_unpaired_preference'),
        ('fused_linear_cpo_loss', 'cpo_loss'),
        ('fused_linear_cpo_loss', 'fused_linear_preference'),
        ('fused_linear_simpo_loss', 'simpo_loss'),
        ('fused_linear_simpo_loss', 'cpo_loss'),
        ('fused_linear_simpo_loss', 'fused_linear_preference'),
        ('fused_linear_grpo_loss_sequence', 'grpo_loss'),
        ('fused_linear_grpo_loss_sequence', 'fused_linear_ppo'),
        ('fused_linear_grpo_loss_token', 'grpo_loss'),
        ('fused_linear_grpo_loss_token', 'fused_linear_ppo'),
        ('fused_linear_cross_entropy', 'cross_entropy'),
        ('fused_linear_jsd', 'jsd'),
        ('tiled_geglu', 'tiled_mlp'),
        ('tiled_geglu', 'geglu'),
        ('tiled_swiglu', 'tiled_mlp'),
        ('tiled_swiglu', 'swiglu'),
        ('sparse_multi_token_attention', 'multi_token_attention'),
        ('sparse_multi_token_attention', 'sparsemax')
),
kernels as (
    select distinct kernel from dim_workload
)
select kernel, stem
from (
    select kernel, regexp_replace(kernel, '_beta=(True|False)$', '') as stem from kernels
    union
    select kernel, 'utils' from kernels
    union
    select b.kernel, b.stem from built_on as b join kernels as k using (kernel)
);
