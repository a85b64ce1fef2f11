import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import {
  envBindings, formatKey, formatPath, rereadFileKeys, secretFileKeys, unboundedTimerKeys, valuesAt, walkProperties,
  type SchemaNode,
} from '../../src/config/walk.js';
import { MAX_TIMER_MS } from '../../src/shared/clock.js';
import { missingFromExample, undocumentedInExample } from '../helpers/example-config.js';
import { attachProblems } from '../helpers/attach-problems.js';

/**
 * Lists of objects are first-class config shapes (docs/architecture.md, "A setting (and its
 * environment variable)"): the walker follows their items, the timer bound covers keys inside
 * them, problems name the item (`credentials[1].listen.port`), and the example can show a
 * commented-out entry. The schemas
 * here are test schemas shaped like the lists the config grows (several credential sets, per-path
 * timeouts), not the real one.
 */
const Listener = Type.Object({ host: Type.String(), port: Type.Integer({ minimum: 0, maximum: 65535 }) });
const sets = (timeoutMs: Record<string, unknown>) => Type.Object({
  credentials: Type.Array(Type.Object({
    listen: Listener,
    keyFile: Type.Optional(Type.String({ 'x-secret-file': true, 'x-reload': 'file re-read', 'x-env': 'B2B_KEY_FILE' })),
    paths: Type.Array(Type.Object({ pathPrefix: Type.String(), timeoutMs: Type.Integer({ minimum: 100, ...timeoutMs }) }), { default: [] }),
  }), { default: [] }),
});
const schemaOf = (t: unknown) => t as SchemaNode;

describe('config lists: the walker', () => {
  it('visits the keys of list items (lists in lists too) at index 0, printed as []', () => {
    const keys: string[] = [];
    walkProperties((path) => keys.push(formatKey(path)), schemaOf(sets({ maximum: MAX_TIMER_MS })));
    assert.deepEqual(keys, [
      'credentials', 'credentials[].listen', 'credentials[].listen.host', 'credentials[].listen.port',
      'credentials[].keyFile', 'credentials[].paths', 'credentials[].paths[].pathPrefix', 'credentials[].paths[].timeoutMs',
    ]);
  });

  it('names a problem inside a list by its item: credentials[1].listen.port, token.attach[0].password', () => {
    assert.equal(formatPath(['credentials', 1, 'listen', 'port']), 'credentials[1].listen.port');
    assert.equal(formatPath(['token', 'attach', 0, 'password']), 'token.attach[0].password');
  });

  it('finds a key in every item of a config: valuesAt, secretFileKeys, rereadFileKeys', () => {
    const schema = schemaOf(sets({ maximum: MAX_TIMER_MS }));
    const config = { credentials: [
      { listen: { host: 'a', port: 1 }, keyFile: '/k/0' },
      { listen: { host: 'b', port: 2 } },
      { listen: { host: 'c', port: 3 }, keyFile: '/k/2', paths: [{ pathPrefix: '/x', timeoutMs: 5 }, { pathPrefix: '/y', timeoutMs: 6 }] },
    ] };
    assert.deepEqual(valuesAt(config, ['credentials', 0, 'listen', 'port']).map(({ path, value }) => [formatPath(path), value]), [
      ['credentials[0].listen.port', 1], ['credentials[1].listen.port', 2], ['credentials[2].listen.port', 3],
    ]);
    assert.deepEqual(valuesAt(config, ['credentials', 0, 'paths', 0, 'timeoutMs']).map(({ path }) => formatPath(path)), [
      'credentials[2].paths[0].timeoutMs', 'credentials[2].paths[1].timeoutMs',
    ]);
    assert.deepEqual(secretFileKeys(config, schema), [['credentials[0].keyFile', '/k/0'], ['credentials[2].keyFile', '/k/2']]);
    assert.deepEqual(rereadFileKeys(config, schema), ['credentials[0].keyFile', 'credentials[2].keyFile']);
  });

  it('binds no environment variable inside a list: one variable cannot say which item it means', () => {
    assert.deepEqual(envBindings(schemaOf(sets({ maximum: MAX_TIMER_MS }))), []);
    assert.ok(envBindings().every(({ path }) => path.every((s) => typeof s === 'string')), 'the real schema binds top-level keys only');
  });
});

describe('config lists: every millisecond key has a bound', () => {
  it('refuses an unbounded millisecond key planted inside a list (of a list)', () => {
    assert.deepEqual(unboundedTimerKeys(schemaOf(sets({}))), [
      'credentials[].paths[].timeoutMs: add `...millis` (maximum MAX_TIMER_MS) to its entry in src/config/schema.ts: Node fires a longer timer after 1 ms (docs/traps.md T15)',
    ]);
    assert.equal(unboundedTimerKeys(schemaOf(sets({ maximum: MAX_TIMER_MS + 1 }))).length, 1, 'a maximum above 2^31-1 is no bound');
    assert.deepEqual(unboundedTimerKeys(schemaOf(sets({ maximum: MAX_TIMER_MS }))), []);
  });

  it('finds none in the real schema, list items included', () => {
    assert.deepEqual(unboundedTimerKeys(), []);
  });
});

describe('config lists: problems name the item', () => {
  const problemsOf = attachProblems;
  const good = { in: 'header', name: 'Authorization', value: 'Bearer {token}' };

  it('a schema problem in the second entry is token.attach[1]...', () => {
    assert.deepEqual(problemsOf([good, { in: 'header', name: 'X-A', value: 'x', extra: 1 }]).map((p) => p.split(':')[0]), ['token.attach[1].extra']);
  });

  it('a check problem in the second entry is token.attach[1]...', () => {
    assert.deepEqual(problemsOf([good, { in: 'header', name: 'X A', value: '{apiKey}' }]).map((p) => p.split(':')[0]), ['token.attach[1].name']);
  });
});

describe('config lists: the example convention', () => {
  const schema = schemaOf(Type.Object({
    routes: Type.Array(Type.Object({
      pathPrefix: Type.String({ description: 'Path prefix.' }),
      timeoutMs: Type.Integer({ maximum: MAX_TIMER_MS, description: 'Deadline.' }),
    }), { default: [], description: 'Per-path deadlines.' }),
  }));
  // A commented-out list key with its first entry: "#   - key:" starts the item, "#     key:"
  // continues it, "#     # ..." documents the key below it.
  const example = [
    '# Per-path deadlines. Default [] (none).',
    '# routes:',
    '#   # Path prefix.',
    '#   - pathPrefix: /export/',
    '#     # Deadline, in milliseconds.',
    '#     timeoutMs: 120000',
    '',
  ].join('\n');

  it('shows a list entry as a commented-out "# - key:" block, each key found and documented', () => {
    assert.deepEqual(missingFromExample(example, schema), []);
    assert.deepEqual(undocumentedInExample(example, schema), []);
  });

  it('names a list key the example lacks, or leaves undocumented, as routes[].timeoutMs', () => {
    const without = example.split('\n').filter((l) => !/timeoutMs|Deadline/.test(l)).join('\n');
    assert.deepEqual(missingFromExample(without, schema).map((p) => p.split(':')[0]), ['routes[].timeoutMs']);
    const bare = example.split('\n').filter((l) => !/Deadline/.test(l)).join('\n');
    assert.deepEqual(undocumentedInExample(bare, schema).map((p) => p.split(' ')[0]), ['routes[].timeoutMs']);
  });
});
