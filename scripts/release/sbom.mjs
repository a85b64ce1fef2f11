// What an unpacked release tree ships, package by package, and the CycloneDX SBOM made from it.
// A package counts when its files are in the tree: under node_modules/ (the production install), or
// compiled into the bundles under dist/ (esbuild inlines dependencies; the source maps name each
// file it took, e.g. ../../../node_modules/debug/src/index.js). `npm sbom --omit dev` is not used:
// it left out packages a production install ships (ajv, commander, ...) and knows nothing of what
// the bundles inline.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

/** The packages installed under `root`/node_modules (nested ones too), keyed by name@version. */
export function installedPackages(root) {
  const found = new Map();
  const walk = (modules) => {
    if (!existsSync(modules)) return;
    for (const entry of readdirSync(modules).sort()) {
      if (entry.startsWith('.')) continue;
      const dirs = entry.startsWith('@') ? readdirSync(join(modules, entry)).sort().map((name) => join(modules, entry, name)) : [join(modules, entry)];
      for (const dir of dirs) {
        const manifest = join(dir, 'package.json');
        if (!existsSync(manifest)) continue;
        add(found, describe(dir), relative(root, dir).split(sep).join('/'));
        walk(join(dir, 'node_modules'));
      }
    }
  };
  walk(join(root, 'node_modules'));
  return found;
}

/**
 * The packages whose files the bundles under `root`/dist contain, from their source maps. A source
 * path is resolved against `buildRoot` (the tree the bundles were built in) to read the package's
 * manifest; without one (a check of an unpacked archive) only names are known: `version` is null.
 */
export function bundledPackages(root, buildRoot) {
  const found = new Map();
  for (const map of filesUnder(join(root, 'dist')).filter((file) => file.endsWith('.map'))) {
    for (const source of readJson(map).sources) {
      const match = source.match(/^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//);
      if (!match) continue;
      const path = match[1].slice(match[1].indexOf('node_modules/'));
      const inBuild = buildRoot && resolve(dirname(join(buildRoot, relative(root, map))), match[1]);
      const where = `bundled in ${relative(root, map).split(sep).join('/').replace(/\.map$/, '')}`;
      if (inBuild) add(found, describe(inBuild), where);
      else add(found, { name: packageName(path), version: null, license: null, dir: null }, where);
    }
  }
  return found;
}

/** The package name at the end of a node_modules path (`node_modules/a/node_modules/@s/b` → `@s/b`). */
export function packageName(path) {
  return path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
}

function describe(dir) {
  const manifest = readJson(join(dir, 'package.json'));
  if (!manifest.name || !manifest.version) throw new Error(`${dir}/package.json has no name or version`);
  const legacy = Array.isArray(manifest.licenses) ? manifest.licenses.map((l) => l.type ?? l).join(' OR ') : null;
  const license = typeof manifest.license === 'string' ? manifest.license : (manifest.license?.type ?? legacy);
  return { name: manifest.name, version: manifest.version, license: license || null, dir };
}

function add(found, pkg, where) {
  const key = `${pkg.name}@${pkg.version}`;
  const known = found.get(key);
  if (known) {
    if (!known.where.includes(where)) known.where.push(where);
  } else {
    found.set(key, { ...pkg, where: [where] });
  }
}

export function filesUnder(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true }).map((name) => join(dir, name)).filter((file) => statSync(file).isFile()).sort();
}

/** The licence texts a package ships beside its manifest (LICENSE, LICENCE, COPYING, NOTICE). */
export function licenseFiles(dir) {
  return readdirSync(dir).filter((name) => /^(licen[cs]e|copying|notice)([.-].*)?$/i.test(name)).sort().map((name) => join(dir, name));
}

export const npmPurl = (name, version) => `pkg:npm/${name.replace(/^@/, '%40')}@${version}`;

/** CycloneDX licence choice: an SPDX id when the text looks like one, else an expression. */
function licenses(license) {
  if (!license) return undefined;
  return /^[A-Za-z0-9.+-]+$/.test(license) ? [{ license: { id: license } }] : [{ expression: license }];
}

/**
 * The CycloneDX 1.6 document. `packages`: the npm packages (installed or bundled) with `where`;
 * `runtimes`: the Node.js binaries `{ name, version, license, sha256, archives }`.
 */
export function cycloneDx({ app, packages, runtimes, epoch }) {
  const components = [];
  for (const pkg of [...packages.values()].sort((a, b) => `${a.name}@${a.version}`.localeCompare(`${b.name}@${b.version}`))) {
    const purl = npmPurl(pkg.name, pkg.version);
    const scoped = pkg.name.match(/^(@[^/]+)\/(.+)$/);
    components.push({
      type: 'library',
      'bom-ref': purl,
      ...(scoped ? { group: scoped[1], name: scoped[2] } : { name: pkg.name }),
      version: pkg.version,
      licenses: licenses(pkg.license),
      purl,
      properties: pkg.where.sort().map((where) => ({ name: 'b2b-sidecar:location', value: where })),
    });
  }
  for (const runtime of runtimes) {
    const purl = npmPurl(runtime.name, runtime.version);
    components.push({
      type: 'platform',
      'bom-ref': purl,
      name: runtime.name,
      version: runtime.version,
      description: `Node.js ${runtime.version} (the registry's binary package ${runtime.name}): ${runtime.path}`,
      licenses: licenses(runtime.license),
      purl,
      hashes: [{ alg: 'SHA-256', content: runtime.sha256 }],
      properties: runtime.archives.map((archive) => ({ name: 'b2b-sidecar:archive', value: archive })),
    });
  }
  const appPurl = npmPurl(app.name, app.version);
  const document = {
    bomFormat: 'CycloneDX',
    specVersion: '1.6',
    version: 1,
    metadata: {
      timestamp: new Date(epoch * 1000).toISOString().replace(/\.000Z$/, 'Z'),
      component: { type: 'application', 'bom-ref': appPurl, name: app.name, version: app.version, licenses: licenses(app.license), purl: appPurl },
      tools: { components: [{ type: 'application', name: 'b2b-sidecar scripts/release.mjs', version: app.version }] },
    },
    components,
    dependencies: [{ ref: appPurl, dependsOn: components.map((c) => c['bom-ref']) }],
  };
  // The serial number is derived from the content, so the same build gives the same file.
  const hash = createHash('sha256').update(JSON.stringify(document)).digest('hex');
  const uuid = `${hash.slice(0, 8)}-${hash.slice(8, 12)}-5${hash.slice(13, 16)}-${((parseInt(hash[16], 16) & 0x3) | 0x8).toString(16)}${hash.slice(17, 20)}-${hash.slice(20, 32)}`;
  return { bomFormat: document.bomFormat, specVersion: document.specVersion, serialNumber: `urn:uuid:${uuid}`, ...document };
}
