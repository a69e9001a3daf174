-- confirms(p50, level, threshold, change): whether a point after a flag's head agrees with the
-- flag: its p50 lies beyond `threshold` from the base side's `level`, the way of the flag's
-- `change` (`confirmation` counts such points).
--     select confirms(1.2, 1.0, 0.05, 0.15);   -- true
-- reads: nothing
create or replace macro confirms(p50, level, threshold, change) as
    abs(ln(p50 / level)) > ln(1 + threshold) and sign(ln(p50 / level)) = sign(change);
