import assert from 'node:assert/strict';
import { validateConfig } from '../../src/config/validate-config.js';
import { ConfigError } from '../../src/shared/errors.js';

/** The problems `validateConfig` lists for a minimal config with `token.attach` set to `attach` ([] when valid). */
export function attachProblems(attach: unknown[]): string[] {
  try {
    validateConfig({ service: { baseUrl: 'https://api.example.com' }, credentials: { apiKey: 'key-1234', password: 'pass-5678' }, token: { attach } });
    return [];
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.problems;
  }
}
