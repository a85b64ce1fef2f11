import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LABEL_VALUES } from '../../src/observability/metric-definitions.js';
import { compileRoute, deadlineFor, ROUTES } from '../../src/shared/routes.js';
import { UPSTREAM_NAMES } from '../../src/shared/upstream-keys.js';
import { validateConfig } from '../../src/config/validate-config.js';

describe('routes declared once (shared/routes.ts)', () => {
  it('the route label values and the upstream sections are the declaration, in its order', () => {
    assert.deepEqual(LABEL_VALUES.route, ROUTES.map((r) => r.name));
    assert.deepEqual(UPSTREAM_NAMES, ROUTES.map((r) => r.section));
  });

  it('each section\'s timeoutMs defaults to its route\'s deadline, and localization.pathPrefix to its prefix', () => {
    const config = validateConfig({ service: { baseUrl: 'https://api.example.com' }, credentials: { apiKey: 'k-123456', password: 'p-123456' }, localization: { baseUrl: 'https://l.example.com' } });
    assert.deepEqual([config.service.timeoutMs, config.localization?.timeoutMs], ROUTES.map((r) => r.deadlineMs));
    assert.equal(config.localization?.pathPrefix, '/l10n');
  });

  it('compiles a policy: prefix, methods and deadline from the section', () => {
    const service = compileRoute('service', { timeoutMs: 1234 });
    assert.deepEqual([service.name, service.section, service.prefix, service.methods, service.deadlines.headersTimeoutMs], ['service', 'service', '', undefined, 1234]);
    const l10n = compileRoute('localization', { timeoutMs: 500, pathPrefix: '/weblate' });
    assert.deepEqual([l10n.prefix, [...l10n.methods ?? []], l10n.deadlines.headersTimeoutMs], ['/weblate', ['GET', 'HEAD'], 500]);
  });

  it('compiles service.pathTimeouts longest prefix first (the first listed of equal ones), and none to nothing', () => {
    const policy = compileRoute('service', {
      timeoutMs: 200,
      pathTimeouts: [{ pathPrefix: '/pub/', timeoutMs: 150 }, { pathPrefix: '/pub/b2b/v1/export/', timeoutMs: 5000 }, { pathPrefix: '/pub/', timeoutMs: 999 }],
    });
    const table = policy.deadlines.pathDeadlines ?? [];
    assert.deepEqual(table.map((d) => [d.prefix, d.ms]), [['/pub/b2b/v1/export/', 5000], ['/pub/', 150], ['/pub/', 999]]);
    assert.equal(deadlineFor(table, '/pub/b2b/v1/export/x.csv?from=1')?.ms, 5000);
    assert.equal(deadlineFor(table, '/pub/b2b/v1/orders')?.ms, 150);
    assert.equal(deadlineFor(table, '/other'), undefined);
    assert.equal('pathDeadlines' in compileRoute('service', { timeoutMs: 200, pathTimeouts: [] }).deadlines, false, 'nothing for engines to look up');
  });
});
