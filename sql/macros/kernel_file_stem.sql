-- kernel_file_stem(filename): the stem by which an upstream file belongs to kernels
-- (`kernel_files`): its name without `.py` and without a `benchmark_` prefix when it lies directly
-- in `src/liger_kernel/ops/`, `src/liger_kernel/transformers/`, `src/liger_kernel/chunked_loss/`
-- or `benchmark/scripts/`; NULL for any other file (docs, tests, CI, other hardware's backends).
--     select kernel_file_stem('benchmark/scripts/benchmark_softmax.py');   -- softmax
-- reads: nothing
create or replace macro kernel_file_stem(filename) as
nullif(
    regexp_extract(
        filename,
        '^(?:src/liger_kernel/(?:ops|transformers|chunked_loss)|benchmark/scripts)/(?:benchmark_)?([^/]+)\.py$',
        1
    ),
    ''
);
