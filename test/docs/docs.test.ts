import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { sidecarMessages } from './messages.js';

const ROOT = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');

describe('operator documentation kept true by the code', () => {
  it('troubleshooting.md explains every message the sidecar writes in an error body, /readyz or /healthz', () => {
    const guide = read('docs/troubleshooting.md');
    const messages = sidecarMessages(ROOT);
    assert.ok(messages.size >= 40, `only ${messages.size} messages found: the extraction in test/docs/messages.ts broke`);
    const missing = [...messages].filter(([text]) => !guide.includes(text)).map(([text, file]) => `${file}: ${text}`);
    assert.deepEqual(missing, [], 'add these to docs/troubleshooting.md (symptom → cause → action)');
  });

  it('every alert links its own runbook section, and every runbook section is an alert', () => {
    const rules = (parse(read('deploy/prometheus/alerts.yaml')) as { groups: Array<{ rules: Array<{ alert?: string; annotations?: Record<string, string> }> }> })
      .groups.flatMap((g) => g.rules).filter((r) => r.alert);
    const headings = [...read('docs/runbook.md').matchAll(/^## (\S+)$/gm)].map((m) => m[1]!);
    for (const rule of rules) {
      assert.equal(rule.annotations?.runbook_url, `docs/runbook.md#${rule.alert!.toLowerCase()}`, rule.alert);
      assert.ok(headings.includes(rule.alert!), `docs/runbook.md has no section ${rule.alert}`);
    }
    assert.deepEqual(headings.sort(), rules.map((r) => r.alert!).sort());
  });

  it('the link checker of npm test (remark-validate-links) fails on a broken relative link or anchor', () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-links-'));
    writeFileSync(join(dir, 'a.md'), '# A\n\n[ok](b.md#b) [missing file](nope.md) [missing anchor](b.md#nowhere)\n');
    writeFileSync(join(dir, 'b.md'), '# B\n');
    const remark = fileURLToPath(new URL('node_modules/.bin/remark', ROOT));
    // The project's own settings (--rc-path), so plugins resolve from its node_modules.
    const run = spawnSync(remark, ['--rc-path', fileURLToPath(new URL('.remarkrc.json', ROOT)), '--frail', '--quiet', '--no-stdout', '--no-color', '.'], { cwd: dir, encoding: 'utf8' });
    assert.notEqual(run.status, 0);
    assert.match(run.stderr, /nope\.md/);
    assert.match(run.stderr, /nowhere/);
    assert.doesNotMatch(run.stderr, /b\.md#b\b/);
  });
});
