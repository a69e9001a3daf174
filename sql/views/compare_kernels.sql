-- compare_kernels: one row per compare of two consecutive gh-pages runs (`fact_run_compare`) and
-- kernel a file of which it lists as changed (`kernel_files`, `kernel_file_stem`): the code of
-- that kernel changed between the two runs. What suspects and environment shifts both read.
-- reads: fact_compare_file, kernel_file_stem, kernel_files
create or replace view compare_kernels as
select distinct f.base_run, f.head_run, k.kernel
from fact_compare_file as f
join kernel_files as k on k.stem = kernel_file_stem(f.filename);
