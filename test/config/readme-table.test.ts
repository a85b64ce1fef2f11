import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ConfigSchema } from '../../src/config/schema.js';
import { readmeConfigTable, renderConfigTable, replaceReadmeConfigTable } from '../../src/config/readme-table.js';

describe('README configuration table', () => {
  it('matches the schema', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const table = readmeConfigTable(readme);
    assert.ok(table !== undefined, 'README.md lacks the <!-- config-table:start --> ... <!-- config-table:end --> markers');
    assert.equal(table, renderConfigTable(ConfigSchema), 'README configuration table is out of date: run `npm run docs:config`');
  });

  it('lists every env var, array entry keys and required keys', () => {
    const table = renderConfigTable(ConfigSchema);
    for (const env of ['B2B_BASE_URL', 'B2B_API_KEY', 'B2B_API_KEY_FILE', 'B2B_PASSWORD', 'B2B_PASSWORD_FILE', 'B2B_RK_OBJECT_ID', 'B2B_LISTEN_PORT', 'B2B_ADMIN_PORT', 'B2B_LOG_LEVEL']) {
      assert.ok(table.includes(`\`${env}\``), env);
    }
    assert.match(table, /^\| `token\.attach\[\]\.in` \|  \| \*\*required\*\* \| restart \| .*One of `header`, `query`, `cookie`/m);
    assert.match(table, /^\| `service\.baseUrl` \| `B2B_BASE_URL` \| \*\*required\*\* \|/m);
    assert.match(table, /^\| `listen\.port` \| `B2B_LISTEN_PORT` \| `8080` \|/m);
    assert.match(table, /^\| `credentials\.password` \| `B2B_PASSWORD` \| — \| restart \| .*Secret/m);
    // Whether a running sidecar picks a change up: only the contents of the credential files.
    assert.match(table, /^\| `credentials\.passwordFile` \| `B2B_PASSWORD_FILE` \| — \| file re-read \|/m);
    assert.match(table, /^\| `localization\.tokenFile` \| `B2B_L10N_TOKEN_FILE` \| — \| file re-read \|/m);
    assert.ok(!/^\| `(listen|token|service)` \|/m.test(table), 'sections get no row of their own');
  });

  it('replaces only the region between the markers', () => {
    const readme = 'intro\n<!-- config-table:start -->\nold\n<!-- config-table:end -->\noutro\n';
    const updated = replaceReadmeConfigTable(readme, '| new |\n');
    assert.equal(updated, 'intro\n<!-- config-table:start -->\n| new |\n<!-- config-table:end -->\noutro\n');
    assert.equal(readmeConfigTable(updated), '| new |\n');
  });
});
