"""Triage: what people say of the verdicts (acknowledgements, annotations, mutes, thresholds),
kept in the lake's ``triage_event`` table as history (docs/TRIAGE.md)."""
