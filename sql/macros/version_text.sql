-- version_text(text): a Liger version as `liger_version` spells it, from what a user types:
-- '0.7.0', 'v0.7.0' and the gh-pages release run name '7644a0f-v0.7.0' all give '0.7.0'.
-- reads: nothing
create or replace macro version_text(text) as
    regexp_replace(trim(text), '^([0-9a-f]{7,40}-)?[vV]', '');
