/**
 * The import rule of src/ (issue 15): each folder may import its own files and the folders it is
 * listed with below, nothing else; no cycles. `npm run lint:deps` checks it, and
 * test/e2e/import-rule.test.ts runs it (and shows it failing on a planted violation).
 * docs/architecture.md explains the layers.
 */
const MAY_IMPORT = {
  shared: [],
  config: ['shared'],
  observability: ['shared'],
  upstream: ['shared', 'observability'],
  // The store a fleet shares its token through (docs/fleet.md): engines only, no token logic.
  fleet: ['shared', 'observability'],
  token: ['shared', 'config', 'observability', 'upstream', 'fleet'],
  // The request path: never config/ (settings arrive as plain options when the sidecar wires it).
  proxy: ['shared', 'observability', 'upstream', 'token'],
  // The sidecar's parts: each wires one feature from the layers above.
  service: ['shared', 'config', 'observability', 'upstream', 'fleet', 'token', 'proxy'],
  localization: ['shared', 'config', 'observability', 'upstream', 'proxy'],
  doctor: ['shared', 'config', 'observability', 'upstream', 'fleet', 'token', 'proxy'],
  // The sidecar's start sequence (sidecar.ts runs it): one part a file, wiring the folders above.
  parts: ['shared', 'config', 'observability', 'upstream', 'fleet', 'token', 'proxy', 'service', 'localization'],
  simulator: ['shared'],
  commands: ['shared', 'config', 'observability', 'upstream', 'fleet', 'token', 'proxy', 'service', 'localization', 'doctor', 'simulator'],
  // The process entries (what becomes dist/cli.js and the two bundles): argv, env, signals, exit codes.
  entry: ['shared', 'commands'],
};

const folderRules = Object.entries(MAY_IMPORT).map(([folder, allowed]) => ({
  name: `${folder}-imports-only-${allowed.length ? allowed.join('-') : 'itself'}`,
  comment: `src/${folder}/ may import ${allowed.length ? `src/{${allowed.join(',')}}/ and ` : ''}its own files`,
  severity: 'error',
  from: { path: `^src/${folder}/` },
  to: { path: '^src/', pathNot: [`^src/(${[folder, ...allowed, 'types'].join('|')})/`, ...(folder === 'commands' ? ['^src/sidecar\\.ts$'] : [])] },
}));

module.exports = {
  forbidden: [
    ...folderRules,
    {
      name: 'proxy-uses-only-the-token-manager',
      comment: 'the request path sees the token through TokenManager, never the client, store or backoff',
      severity: 'error',
      from: { path: '^src/proxy/' },
      to: { path: '^src/token/', pathNot: '^src/token/token-manager\\.ts$' },
    },
    {
      name: 'nothing-imports-the-entry-points',
      comment: 'src/entry/ holds the process entries, imported by nothing else; sidecar.ts is wired by the commands and nothing below them',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(entry|commands)/' },
      to: { path: '^src/(entry/|sidecar\\.ts$)' },
    },
    {
      name: 'root-wires-not-commands',
      comment: 'sidecar.ts wires the parts; commands sit above it',
      severity: 'error',
      from: { path: '^src/sidecar\\.ts$' },
      to: { path: '^src/(commands|doctor|simulator)/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    exclude: { path: '^src/types/' },
  },
};
