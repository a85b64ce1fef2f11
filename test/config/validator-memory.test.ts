import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const BUILT = fileURLToPath(new URL('../../dist/config/validate-config.js', import.meta.url));

describe('the prebuilt config validator', () => {
  it('is freed once the configuration is validated: an idle sidecar does not keep its source and code', () => {
    // The built module loads dist/config-validator.cjs (what `run` uses). A heap snapshot collects
    // garbage first; the validator's source text is in it while the validator is in use (the
    // same job) and gone a job later.
    const script = `
      import { getHeapSnapshot } from 'node:v8';
      const { validateConfig } = await import(${JSON.stringify(BUILT)});
      const held = async () => {
        let text = '';
        for await (const chunk of getHeapSnapshot()) text += chunk;
        // Assembled here: the literal would match this script's own source text.
        return text.includes(['module.exports', '= validate10'].join(' '));
      };
      const config = { service: { baseUrl: 'https://api.example.com' }, credentials: { apiKey: 'k', password: 'p' } };
      validateConfig(config);
      const during = await held();
      await new Promise((resolve) => setTimeout(resolve, 10));
      validateConfig(config);
      await new Promise((resolve) => setTimeout(resolve, 10));
      process.stdout.write(JSON.stringify({ during, after: await held() }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { during: boolean; after: boolean };
    assert.equal(out.during, true, 'the probe finds the validator while it is in use');
    assert.equal(out.after, false, 'the validator (or a module naming it as parent) is still held after validation');
  });
});
