// A preload (`node --import ./test/helpers/fail-open.mjs dist/cli.js run ...`) that injects a
// failure into a whole process without any hook in the code under test: opening the file named by
// TEST_FAIL_OPEN fails with EIO once TEST_FAIL_OPEN_AFTER opens of it have succeeded (the
// configuration check reads a file before start-up reads it again). syncBuiltinESMExports makes
// the ES module bundle's named imports of node:fs see the patched functions too. With
// TEST_FAIL_OPEN_HANG=1 an asynchronous open never settles instead (a hung file system).
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

const target = process.env.TEST_FAIL_OPEN;
const after = Number(process.env.TEST_FAIL_OPEN_AFTER ?? '0');
if (target) {
  let opened = 0;
  const refuse = (path) => {
    if (String(path) !== target) return undefined;
    opened++;
    if (opened <= after) return undefined;
    return Object.assign(new Error(`EIO: i/o error, open '${target}'`), { code: 'EIO', errno: -5, syscall: 'open', path: target });
  };
  const openSync = fs.openSync;
  fs.openSync = function patchedOpenSync(path, ...rest) {
    const err = refuse(path);
    if (err) throw err;
    return openSync.call(this, path, ...rest);
  };
  const open = fs.promises.open;
  fs.promises.open = function patchedOpen(path, ...rest) {
    const err = refuse(path);
    // A real hung open holds a libuv thread, which keeps the process alive: so does the interval.
    if (err && process.env.TEST_FAIL_OPEN_HANG === '1') {
      process.stderr.write(`fail-open: hanging the open of ${target}\n`); // tests wait for this line
      return new Promise(() => setInterval(() => undefined, 1000));
    }
    return err ? Promise.reject(err) : open.call(this, path, ...rest);
  };
  const readFileSync = fs.readFileSync;
  fs.readFileSync = function patchedReadFileSync(path, ...rest) {
    const err = refuse(path);
    if (err) throw err;
    return readFileSync.call(this, path, ...rest);
  };
  syncBuiltinESMExports();
  process.on('exit', () => process.stderr.write(`fail-open: ${target} opened ${opened} times\n`));
}
