import assert from 'node:assert/strict';
import { validateConfig } from '../../src/config/validate-config.js';
import { ConfigError } from '../../src/shared/errors.js';

/** The problems `validateConfig` lists for `raw`, or [] when it is valid. */
export function problemsOf(raw: unknown): string[] {
  try {
    validateConfig(raw);
    return [];
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.problems;
  }
}

/** The problems `validateConfig` lists for a minimal config with `token.attach` set to `attach` ([] when valid). */
export function attachProblems(attach: unknown[]): string[] {
  return problemsOf({ service: { baseUrl: 'https://api.example.com' }, credentials: { apiKey: 'key-1234', password: 'pass-5678' }, token: { attach } });
}
