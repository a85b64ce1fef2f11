/**
 * The `run` command lines the fast start-up path takes without commander: `run`, and
 * `run` with one `--config FILE`, `-c FILE` or `--config=FILE`. Anything else (help, other
 * options, a repeated or empty --config, a value that looks like an option) returns undefined and
 * goes through commander in cli-bundle.ts, so its help, errors and exit codes stay the only ones.
 * For these forms commander's result is the same `{ config? }`; test/e2e/run-fast-path.test.ts checks it.
 */
export function plainRunArgs(argv: readonly string[]): { config?: string } | undefined {
  if (argv[0] !== 'run') return undefined;
  if (argv.length === 1) return {};
  if (argv.length === 2 && argv[1]!.startsWith('--config=')) return plainValue(argv[1]!.slice('--config='.length));
  if (argv.length === 3 && (argv[1] === '--config' || argv[1] === '-c')) return plainValue(argv[2]!);
  return undefined;
}

function plainValue(file: string): { config: string } | undefined {
  return file !== '' && !file.startsWith('-') ? { config: file } : undefined;
}
