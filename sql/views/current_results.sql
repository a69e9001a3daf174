-- current_results: one row per result that upstream shows today, in the columns of `results`.
--
-- Current means: in the newest revision of a main-branch CSV, or in a gh-pages run that
-- upstream still lists.
-- reads: results
create or replace view current_results as
select *
from results
where is_current;
