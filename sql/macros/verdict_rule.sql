-- verdict_rule(): the constants of the verdict rule, in one place (docs/VERDICTS.md says why
-- each has its value and what the verdict benchmark measured with them).
--   significance  how many noise scales a change must stand out by (as Conbench's z = 5)
--   doubt         a change beyond the threshold and this many noise scales, but short of
--                 `significance`, is suspicious: never `unchanged`
--   equivalence   `unchanged` rules out a change this large (a fraction) ...
--   confidence_z  ... at this one-sided normal quantile (1.645: 95%)
--   prior_steps   the pooled noise of similar series weighs as much as this many run steps
--   sweep_quantile  a sweep's noise is read from this quantile of its historical shifts ...
--   sweep_scale   ... divided by this: the (1 + sweep_quantile) / 2 quantile of the standard
--                 normal, so that it estimates a standard deviation (a test keeps the two in step)
--   min_history   fewer run steps than this and a series is `unchanged` only within the threshold,
--                 with at least one run step and the pools of its kind
--   speedup_z     a speedup wins when it is this many times its pairing's noise from 1
--   recent_runs   `compare_runs` also judges the head against the median of the base run and
--                 the runs before it, this many in all (a run's recent level)
--   confirm_runs  a flag is confirmed or taken back by this many runs after its head
--   environment_move  a series moved in a run step when its own change is beyond this ...
--   environment_share  ... and a run is an environment shift when this share of the Liger series
--                 of kernels whose code did not change moved one way ...
--   environment_kernels  ... from at least this many kernels (`environment_shifts`)
-- reads: nothing
create or replace macro verdict_rule() as {
    'significance': 5.0,
    'doubt': 3.0,
    'equivalence': 0.25,
    'confidence_z': 1.645,
    'prior_steps': 10.0,
    'sweep_quantile': 0.75,
    'sweep_scale': 1.1503493803760079::double,
    'min_history': 5,
    'speedup_z': 3.0,
    'recent_runs': 5,
    'confirm_runs': 3,
    'environment_move': 0.05,
    'environment_share': 0.05,
    'environment_kernels': 3
};
