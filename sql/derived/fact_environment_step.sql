-- fact_environment_step: one row per Liger timing series and environment shift
-- (`environment_shifts`) whose step it holds with its kernel's code unchanged
-- (`environment_evidence`): its own change in that step (`own_log`), whichever way it went, is
-- the machine's, not the code's. What a comparison spanning the run takes out before it calls a
-- change the code's (`judge`: `environment_change`).
-- Materialized at publish (a derived table, recreated whole in the publishing transaction): every
-- comparison reads it, and it depends on no setting of the session.
-- reads: environment_evidence, environment_shifts
select e.series_digest, e.run, e.upload_rank, e.own_log
from environment_evidence as e
semi join environment_shifts as s on s.run = e.run
order by e.upload_rank, e.series_digest;
