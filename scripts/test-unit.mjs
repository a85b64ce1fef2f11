// `npm run test:unit`: the quick subset, with no build: every test file except the whole-process
// ones (test/e2e/, test/deploy/) and any other that runs the built dist/ (it imports
// test/helpers/cli.js or names dist/), which would test the previous build.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const files = readdirSync('test', { withFileTypes: true })
  .filter((d) => d.isDirectory() && !['e2e', 'deploy', 'helpers', 'fixtures', 'clients'].includes(d.name))
  .flatMap((d) => readdirSync(join('test', d.name)).filter((f) => f.endsWith('.test.ts')).map((f) => join('test', d.name, f)))
  .filter((f) => !/helpers\/cli\.js|dist\//.test(readFileSync(f, 'utf8')))
  .sort();
const run = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...files], { stdio: 'inherit' });
process.exitCode = run.status ?? 1;
