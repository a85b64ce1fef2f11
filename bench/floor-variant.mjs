/**
 * bench/bare-undici.mjs with some of the sidecar's V8 settings, applied from the build's
 * shared/v8-tuning.js once its modules are loaded (as the sidecar applies them): TUNE is a comma
 * list of `liftoff`, `growth` and `young`. Used by bench/floor-settings.ts (finding 29); same
 * environment otherwise.
 */
import { sidecarModules } from './lib/reference-env.mjs';

const tune = (process.env.TUNE ?? '').split(',').filter(Boolean);
// Not SIDECAR_DIST: with it, reference-env.mjs applies all three settings and the sidecar's trust store.
const dist = process.env.TUNING_DIST;
if (!dist) {
  process.stderr.write('TUNING_DIST (a built dist/ directory) is required\n');
  process.exit(2);
}
await import('./bare-undici.mjs');
const { setFlagsFromString } = await import('node:v8');
const tuning = await import(`${sidecarModules(dist)}/shared/v8-tuning.js`);
if (tune.includes('liftoff')) for (const flag of tuning.WASM_BASELINE_ONLY_FLAGS) setFlagsFromString(flag);
if (tune.includes('growth')) setFlagsFromString(`--heap-growing-percent=${tuning.OLD_SPACE_GROWTH_PERCENT}`);
if (tune.includes('young')) tuning.capYoungGeneration(tuning.YOUNG_GENERATION_CAP_BYTES);
