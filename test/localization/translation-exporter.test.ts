import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from '@prometheus-io/client';
import { createLocalizationClient } from '../../src/localization/localization-client.js';
import { createTranslationMetrics } from '../../src/observability/metrics.js';
import { createTranslationExporter } from '../../src/localization/translation-exporter.js';
import { parseTranslationRef, type TranslationRef } from '../../src/config/translation-ref.js';
import { createLocalizationSimulator, type LocalizationSimulator } from '../../src/simulator/localization-simulator.js';
import { loadTrustedCas } from '../../src/shared/tls.js';
import { FakeClock, flush } from '../helpers/fake-clock.js';
import { testTls } from '../helpers/tls.js';

const TOKEN = 'wlu_exporter7oken0a1b2c3d';

interface Ctx {
  sim: LocalizationSimulator;
  registry: Registry;
  clock: FakeClock;
  exporter: ReturnType<typeof createTranslationExporter>;
  logs: Array<{ message: string; meta?: Record<string, unknown> }>;
  /** Settle function for `clock.advanceAsync`: lets the polls a timer started finish. */
  settle: () => Promise<void>;
  /** The exposition lines of one metric family, without HELP/TYPE. */
  lines: (name: string) => Promise<string[]>;
}

async function withExporter(watch: string[], fn: (ctx: Ctx) => Promise<void>, clientToken = TOKEN): Promise<void> {
  const tls = await testTls();
  const sim = createLocalizationSimulator({ tls, token: TOKEN });
  const { url } = await sim.start();
  const client = createLocalizationClient({ baseUrl: url, ca: loadTrustedCas(tls.caFile), token: () => clientToken, timeoutMs: 5000 });
  const registry = new Registry();
  const clock = new FakeClock();
  const logs: Ctx['logs'] = [];
  const exporter = createTranslationExporter({
    metrics: createTranslationMetrics(registry), client, clock, watch: watch.map(parseTranslationRef), pollIntervalSeconds: 60,
    logger: { warn: (message, meta) => logs.push({ message, meta }) },
  });
  const settle = async () => {
    await flush();
    await exporter.idle();
    await flush();
  };
  const lines = async (name: string) =>
    (await registry.metrics()).split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  try {
    await fn({ sim, registry, clock, exporter, logs, settle, lines });
  } finally {
    await exporter.stop();
    await client.close();
    await sim.stop();
  }
}

const labels = (ref: string) => {
  const r: TranslationRef = parseTranslationRef(ref);
  return `project="${r.project}",component="${r.component}",language="${r.language}"`;
};

describe('translation exporter', () => {
  it('exports units, words, last change and errors for each watched translation after a poll', async () => {
    await withExporter(['demo/web/en', 'demo/emails/fr'], async ({ exporter, lines }) => {
      await exporter.pollOnce();
      const en = labels('demo/web/en');
      const fr = labels('demo/emails/fr');
      assert.deepEqual(await lines('b2b_sidecar_translation_units'), [
        `b2b_sidecar_translation_units{${en},state="total"} 240`,
        `b2b_sidecar_translation_units{${en},state="translated"} 228`,
        `b2b_sidecar_translation_units{${en},state="fuzzy"} 7`,
        `b2b_sidecar_translation_units{${en},state="failing_checks"} 3`,
        `b2b_sidecar_translation_units{${en},state="have_suggestion"} 5`,
        `b2b_sidecar_translation_units{${en},state="have_comment"} 2`,
        `b2b_sidecar_translation_units{${fr},state="total"} 38`,
        `b2b_sidecar_translation_units{${fr},state="translated"} 0`,
        `b2b_sidecar_translation_units{${fr},state="fuzzy"} 0`,
        `b2b_sidecar_translation_units{${fr},state="failing_checks"} 0`,
        `b2b_sidecar_translation_units{${fr},state="have_suggestion"} 0`,
        `b2b_sidecar_translation_units{${fr},state="have_comment"} 0`,
      ]);
      assert.deepEqual((await lines('b2b_sidecar_translation_words')).slice(0, 4), [
        `b2b_sidecar_translation_words{${en},state="total"} 1620`,
        `b2b_sidecar_translation_words{${en},state="translated"} 1502`,
        `b2b_sidecar_translation_words{${en},state="fuzzy"} 61`,
        `b2b_sidecar_translation_words{${en},state="failing_checks"} 19`,
      ]);
      // Zone-less 2025-11-18T14:03:27.512964 read as UTC; fr was never changed, so it has no series.
      assert.deepEqual(await lines('b2b_sidecar_translation_last_change_timestamp_seconds'), [
        `b2b_sidecar_translation_last_change_timestamp_seconds{${en}} ${Date.UTC(2025, 10, 18, 14, 3, 27, 512) / 1000}`,
      ]);
      assert.deepEqual(await lines('b2b_sidecar_translation_lookup_errors_total'), [
        `b2b_sidecar_translation_lookup_errors_total{${en}} 0`,
        `b2b_sidecar_translation_lookup_errors_total{${fr}} 0`,
      ]);
    });
  });

  it('exports X-RateLimit-Remaining as a gauge', async () => {
    await withExporter(['demo/web/de'], async ({ exporter, lines }) => {
      await exporter.pollOnce();
      assert.deepEqual(await lines('b2b_sidecar_translation_rate_limit_remaining'), ['b2b_sidecar_translation_rate_limit_remaining 4999']);
      await exporter.pollOnce();
      assert.deepEqual(await lines('b2b_sidecar_translation_rate_limit_remaining'), ['b2b_sidecar_translation_rate_limit_remaining 4998']);
    });
  });

  it('keeps the previous values and counts an error when an answer is malformed', async () => {
    await withExporter(['demo/web/en'], async ({ sim, exporter, lines, logs }) => {
      await exporter.pollOnce();
      sim.faults.malformNext('translated', 'lots');
      await exporter.pollOnce();
      sim.faults.malformNext('total_words');
      await exporter.pollOnce();
      const en = labels('demo/web/en');
      assert.ok((await lines('b2b_sidecar_translation_units')).includes(`b2b_sidecar_translation_units{${en},state="translated"} 228`));
      assert.ok((await lines('b2b_sidecar_translation_words')).includes(`b2b_sidecar_translation_words{${en},state="total"} 1620`));
      assert.deepEqual(await lines('b2b_sidecar_translation_lookup_errors_total'), [`b2b_sidecar_translation_lookup_errors_total{${en}} 2`]);
      assert.deepEqual(logs.map((l) => l.meta?.code), ['SIDECAR_ERR_INVALID_RESPONSE', 'SIDECAR_ERR_INVALID_RESPONSE']);
      assert.match(String(logs[0]?.meta?.error), /translated must be integer/);
    });
  });

  it('counts a rejected token as an error and never logs the token', async () => {
    const wrong = 'wlu_notthe7oken9f8e7d6c';
    await withExporter(['demo/web/en'], async ({ exporter, lines, logs }) => {
      await exporter.pollOnce();
      assert.deepEqual(await lines('b2b_sidecar_translation_units'), []);
      assert.deepEqual(await lines('b2b_sidecar_translation_lookup_errors_total'), [`b2b_sidecar_translation_lookup_errors_total{${labels('demo/web/en')}} 1`]);
      assert.equal(logs[0]?.meta?.code, 'SIDECAR_ERR_L10N_UNAUTHORIZED');
      const logged = JSON.stringify(logs);
      assert.ok(!logged.includes(wrong) && !logged.includes(TOKEN));
    }, wrong);
  });

  it('polls on start and then every pollIntervalSeconds on the injected clock', async () => {
    await withExporter(['demo/web/en'], async ({ sim, clock, exporter, settle }) => {
      exporter.start();
      await clock.advanceAsync(0, settle);
      assert.equal(sim.stats.count, 1);
      await clock.advanceAsync(59_999, settle);
      assert.equal(sim.stats.count, 1);
      await clock.advanceAsync(1, settle);
      assert.equal(sim.stats.count, 2);
      await clock.advanceAsync(120_000, settle);
      assert.equal(sim.stats.count, 4);
      await exporter.stop();
      assert.equal(clock.pending, 0);
    });
  });

  it('delays the next poll of a translation answered 429 until Retry-After has passed', async () => {
    await withExporter(['demo/web/en'], async ({ sim, clock, exporter, settle, lines }) => {
      sim.faults.rateLimitNext(600);
      exporter.start();
      await clock.advanceAsync(0, settle);
      assert.equal(sim.stats.count, 1);
      assert.equal(clock.nextDelay(), 600_000);
      // A manual poll inside the Retry-After window is held back too.
      await exporter.pollOnce();
      await clock.advanceAsync(599_999, settle);
      assert.equal(sim.stats.count, 1);
      await clock.advanceAsync(1, settle);
      assert.equal(sim.stats.count, 2);
      assert.ok((await lines('b2b_sidecar_translation_units')).length > 0);
      assert.deepEqual(await lines('b2b_sidecar_translation_lookup_errors_total'), [`b2b_sidecar_translation_lookup_errors_total{${labels('demo/web/en')}} 1`]);
      // Back to the normal interval after the throttled poll succeeded.
      assert.equal(clock.nextDelay(), 60_000);
    });
  });

  it('keeps the normal interval when Retry-After is shorter than it', async () => {
    await withExporter(['demo/web/en'], async ({ sim, clock, exporter, settle }) => {
      sim.faults.rateLimitNext(5);
      exporter.start();
      await clock.advanceAsync(0, settle);
      assert.equal(clock.nextDelay(), 60_000);
    });
  });
});
