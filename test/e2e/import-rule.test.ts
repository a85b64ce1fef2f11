import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = join(ROOT, 'node_modules/.bin/depcruise');

interface Violation { rule: { name: string }; from: string; to: string }

async function cruise(cwd: string): Promise<Violation[]> {
  const { stdout } = await promisify(execFile)(DEPCRUISE, ['src', '--config', CONFIG, '--output-type', 'json'], { cwd, maxBuffer: 64 * 1024 * 1024 })
    .catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  return (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations;
}

/** A copy of src/ with files added, cruised with the project's own rules. */
async function cruisePlanted(files: Record<string, string>): Promise<Violation[]> {
  const dir = mkdtempSync(join(tmpdir(), 'b2b-import-rule-'));
  try {
    cpSync(join(ROOT, 'src'), join(dir, 'src'), { recursive: true });
    cpSync(join(ROOT, 'tsconfig.json'), join(dir, 'tsconfig.json'));
    for (const [path, source] of Object.entries(files)) {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), source);
    }
    return await cruise(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the import rule of src/ (.dependency-cruiser.cjs)', () => {
  it('holds for the tree as it is', async () => {
    assert.deepEqual(await cruise(ROOT), []);
  });

  it('fails when the request path imports config/', async () => {
    const found = await cruisePlanted({ 'src/proxy/planted.ts': "import { ConfigSchema } from '../config/schema.js';\nexport const x = ConfigSchema;\n" });
    assert.deepEqual(found.map((v) => [v.rule.name, v.from, v.to]), [['proxy-imports-only-shared-observability-upstream-token', 'src/proxy/planted.ts', 'src/config/schema.ts']]);
  });

  it('fails when proxy/ reaches into token/ internals, and on an upward import from shared/', async () => {
    const internals = await cruisePlanted({ 'src/proxy/planted.ts': "import { createBackoff } from '../token/pacing/backoff.js';\nexport const x = createBackoff;\n" });
    assert.deepEqual(internals.map((v) => v.rule.name), ['proxy-uses-only-the-token-manager']);
    const upward = await cruisePlanted({ 'src/shared/planted.ts': "import type { Metrics } from '../observability/metrics.js';\nexport type X = Metrics;\n" });
    assert.deepEqual(upward.map((v) => v.rule.name), ['shared-imports-only-itself']);
  });

  it('fails on a cycle', async () => {
    const found = await cruisePlanted({
      'src/shared/a-planted.ts': "import { b } from './b-planted.js';\nexport const a = (): number => b() + 1;\n",
      'src/shared/b-planted.ts': "import { a } from './a-planted.js';\nexport const b = (): number => a() - 1;\n",
    });
    assert.deepEqual([...new Set(found.map((v) => v.rule.name))], ['no-circular']);
  });
});
