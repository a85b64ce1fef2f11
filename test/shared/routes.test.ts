import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LABEL_VALUES } from '../../src/observability/metric-definitions.js';
import { compileRoute, ROUTES } from '../../src/shared/routes.js';
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
});
