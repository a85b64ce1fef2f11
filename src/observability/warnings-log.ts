import type { Logger } from './logger.js';

/**
 * The warnings log, rendered from the one status (status.ts): fed the status's `warnings` again and
 * again, it logs each warning once when it appears (`warning raised`, warn) and once when it is
 * gone (`warning cleared`, info), so the log says what `/readyz` and `/status` said and when.
 *
 * A warning is recognised by its shape: its text with the numbers and times taken out, since a
 * warning may restate its counts as they change ("3 in 10 min", "running for 12 s").
 */
export class WarningsLog {
  readonly #logger: Logger;
  /** The warnings in force, by shape, with the text last seen. */
  #current = new Map<string, string>();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Compares `warnings` with the ones last seen and logs what appeared and what cleared. */
  observe(warnings: readonly string[]): void {
    const next = new Map<string, string>();
    for (const warning of warnings) next.set(shapeOf(warning), warning);
    for (const [shape, warning] of next) {
      if (!this.#current.has(shape)) this.#logger.warn('warning raised', { warning });
    }
    for (const [shape, warning] of this.#current) {
      if (!next.has(shape)) this.#logger.info('warning cleared', { warning });
    }
    this.#current = next;
  }
}

/** A warning without its numbers and times: the same warning restating its counts has the same shape. */
export function shapeOf(warning: string): string {
  return warning.replace(/\d[\d:.TZ-]*/g, '#');
}
