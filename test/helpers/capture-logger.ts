import { Writable } from 'node:stream';
import type { Logger } from '../../src/observability/logger.js';
import { createLogger } from '../../src/observability/logger.js';
import { SecretSet } from '../../src/shared/secrets.js';

export interface CapturedLogger {
  logger: Logger;
  /** The secret set the logger scrubs; add secrets to it in the test. */
  secrets: SecretSet;
  /** Every line written so far, parsed. */
  lines(): Record<string, unknown>[];
  /** Everything written so far, raw, for "this secret never appears" assertions. */
  text(): string;
}

/** A real production logger whose output goes to memory instead of stdout. */
export function createCaptureLogger(options: { level?: string; secrets?: SecretSet } = {}): CapturedLogger {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      chunks.push(chunk.toString());
      callback();
    },
  });
  const secrets = options.secrets ?? new SecretSet();
  const logger = createLogger({ level: options.level ?? 'debug', secrets, stream });
  const text = () => chunks.join('');
  return {
    logger,
    secrets,
    text,
    lines: () => text().split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
