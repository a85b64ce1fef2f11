import type { TranslationLabels, TranslationMetrics } from '../observability/metrics.js';
import type { Clock, TimerHandle } from '../shared/clock.js';
import type { LocalizationClient } from './localization-client.js';
import { LocalizationError, LocalizationRateLimitedError } from './localization-errors.js';
import { formatTranslationRef, type TranslationRef } from '../config/translation-ref.js';
import { lastChangeEpochSeconds, type Translation } from './translation-schema.js';

/** The part of the process logger the exporter uses. */
export interface ExporterLogger {
  warn(message: string, meta?: Record<string, unknown>): unknown;
}

export interface TranslationExporterOptions {
  /** The translation gauges (observability/metrics.ts `createTranslationMetrics`). */
  metrics: TranslationMetrics;
  client: Pick<LocalizationClient, 'getTranslation'>;
  watch: TranslationRef[];
  pollIntervalSeconds: number;
  clock: Clock;
  logger: ExporterLogger;
}

export interface TranslationExporter {
  /** Polls every watched translation now, then every `pollIntervalSeconds`. */
  start(): void;
  /** Cancels the schedule and waits for polls in flight; idempotent. */
  stop(): Promise<void>;
  /** Polls every watched translation not held back by a Retry-After; resolves when all are done. */
  pollOnce(): Promise<void>;
  /** Resolves when no poll is in flight (tests, shutdown). */
  idle(): Promise<void>;
}

interface Watched {
  ref: TranslationRef;
  labels: TranslationLabels;
  /** Monotonic ms before which a Retry-After forbids polling. */
  notBefore: number;
  inFlight: Promise<void> | undefined;
  timer: TimerHandle | undefined;
}

/**
 * Exports progress gauges for the watched translations, polling on the injected clock. A failed
 * or malformed lookup only increments the error counter: the last good values stay, so a bad
 * answer never shows up as a bogus number. A 429 holds that translation back for Retry-After.
 */
export function createTranslationExporter(options: TranslationExporterOptions): TranslationExporter {
  const { metrics, client, clock, logger } = options;
  const intervalMs = options.pollIntervalSeconds * 1000;
  const watched: Watched[] = options.watch.map((ref) => {
    const labels = { project: ref.project, component: ref.component, language: ref.language };
    metrics.watched(labels);
    return { ref, labels, notBefore: -Infinity, inFlight: undefined, timer: undefined };
  });
  let running = false;

  function record(w: Watched, t: Translation): void {
    const changed = lastChangeEpochSeconds(t);
    metrics.recorded(w.labels, {
      // In TRANSLATION_STATES order.
      units: [t.total, t.translated, t.fuzzy, t.failing_checks, t.have_suggestion, t.have_comment],
      words: [t.total_words, t.translated_words, t.fuzzy_words, t.failing_checks_words],
      lastChangeSeconds: typeof changed === 'number' ? changed : undefined,
    });
  }

  async function lookup(w: Watched): Promise<void> {
    try {
      const { translation, rateLimitRemaining } = await client.getTranslation(w.ref);
      record(w, translation);
      if (rateLimitRemaining !== undefined) metrics.rateLimitRemaining(rateLimitRemaining);
    } catch (err) {
      metrics.lookupFailed(w.labels);
      if (err instanceof LocalizationError && err.rateLimitRemaining !== undefined) metrics.rateLimitRemaining(err.rateLimitRemaining);
      if (err instanceof LocalizationRateLimitedError && err.retryAfterSeconds !== undefined) {
        w.notBefore = clock.now() + err.retryAfterSeconds * 1000;
      }
      const { code, message } = err as { code?: string; message?: string };
      logger.warn('translation lookup failed', { translation: formatTranslationRef(w.ref), code, error: message });
    }
  }

  /** One poll at a time per translation; a second caller shares the one in flight. */
  function poll(w: Watched): Promise<void> {
    if (clock.now() < w.notBefore) return Promise.resolve();
    w.inFlight ??= lookup(w).finally(() => {
      w.inFlight = undefined;
    });
    return w.inFlight;
  }

  function schedule(w: Watched, delayMs: number): void {
    if (!running) return;
    w.timer = clock.setTimeout(() => {
      w.timer = undefined;
      void poll(w).then(() => schedule(w, Math.max(intervalMs, w.notBefore - clock.now())));
    }, delayMs);
  }

  const idle = async () => {
    await Promise.all(watched.map((w) => w.inFlight));
  };

  return {
    start() {
      if (running) return;
      running = true;
      for (const w of watched) schedule(w, 0);
    },
    async stop() {
      running = false;
      for (const w of watched) {
        clock.clearTimeout(w.timer);
        w.timer = undefined;
      }
      await idle();
    },
    pollOnce: async () => {
      await Promise.all(watched.map(poll));
    },
    idle,
  };
}
