/**
 * What a credential set's id may be: short, lower case, usable in a file name and a metric label.
 * A module of its own, importing nothing: the schema (TypeBox) and `run`'s config loading both
 * read it, and `run` must not load TypeBox (test/e2e/module-footprint.test.ts).
 */
export const CREDENTIAL_ID_PATTERN = '^[a-z0-9][a-z0-9_-]{0,62}$';
