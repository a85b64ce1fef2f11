import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as errors from '../../src/shared/errors.js';
import * as l10nErrors from '../../src/localization/localization-errors.js';

describe('error classes', () => {
  it('each names itself with a literal, so the minified CLI bundle logs the same names', () => {
    const classes = Object.entries({ ...errors, ...l10nErrors }).filter(([, v]) => typeof v === 'function' && v.prototype instanceof Error);
    assert.ok(classes.length >= 13, `found ${classes.length} error classes`);
    for (const [exported, Class] of classes) {
      const args = exported === 'ConfigError' ? [['a problem']] : ['SIDECAR_ERR_X', 400, 'message', {}];
      const instance = Reflect.construct(Class as new (...a: unknown[]) => Error, args) as Error;
      assert.equal(instance.name, exported);
      // Declared in the class body, not derived from the (minifiable) constructor name.
      assert.match(String(Class), new RegExp(`['"]${exported}['"]`), `${exported} declares its name`);
    }
  });
});
