-- speedup_pool: one row per metric: the noise a pairing without gh-pages history (so without
-- a row in `fact_speedup_noise`) is judged against: the pooled noise of its metric's pairings.
-- reads: fact_speedup_noise
create or replace view speedup_pool as
select metric, any_value(pool) as noise
from fact_speedup_noise
group by metric;
