import { readFileSync } from 'node:fs';
import type { LocalizationConfig } from '../config/schema.js';
import { ConfigError } from '../shared/errors.js';
import { watchFiles, type FileWatch } from '../shared/file-watch.js';
import type { SecretSet } from '../shared/secrets.js';

/** The current localization token (undefined = none configured), plus reload and close. */
export interface TokenSource {
  (): string | undefined;
  /** Re-reads `tokenFile` now (SIGHUP, or after a 401); keeps the old token if the file is bad. */
  reload(): void;
  /** Stops watching the file; idempotent. */
  close(): void;
}

export interface TokenSourceOptions {
  secrets: SecretSet;
  /** Re-read `tokenFile` when it changes (default true; one-shot commands pass false). */
  watch?: boolean;
  /** Told when a re-read fails; the old token stays in use. */
  onError?: (err: Error) => void;
}

/**
 * Reads `localization.token` or `localization.tokenFile` (trailing newline trimmed) and adds the
 * token to the SecretSet so the logger scrubs it. A bad file at start throws; later it keeps the
 * old token. The directory is watched, not the file, because Kubernetes swaps secrets by
 * replacing a symlink, which a watch on the file itself never sees.
 */
export function createTokenSource(cfg: Pick<LocalizationConfig, 'token' | 'tokenFile'>, options: TokenSourceOptions): TokenSource {
  const file = cfg.tokenFile;
  let current = cfg.token === undefined ? undefined : checked(cfg.token, 'localization.token (B2B_L10N_TOKEN)');
  if (file !== undefined) current = readToken(file);
  options.secrets.add(current);

  const reload = () => {
    if (file === undefined) return;
    try {
      current = readToken(file);
      options.secrets.add(current);
    } catch (err) {
      options.onError?.(err as Error);
    }
  };

  let watcher: FileWatch | undefined;
  if (file !== undefined && options.watch !== false) {
    watcher = watchFiles([file], reload, { persistent: false, onError: (_dir, err) => options.onError?.(err) });
  }

  const source = (() => current) as TokenSource;
  source.reload = reload;
  source.close = () => {
    watcher?.close();
    watcher = undefined;
  };
  return source;
}

/** Problems are ConfigErrors naming the key, so `run` and `translation` exit 2 listing them. */
function readToken(file: string): string {
  const where = `localization.tokenFile (B2B_L10N_TOKEN_FILE): ${file}`;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError([`${where}: cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  return checked(text.trim(), where);
}

/** A token with CR/LF or non-ASCII would make the header write throw (docs/traps.md T14). */
function checked(token: string, where: string): string {
  if (token.length === 0) throw new ConfigError([`${where}: the token is empty`]);
  if (!/^[\x21-\x7e]+$/.test(token)) throw new ConfigError([`${where}: the token has spaces, control or non-ASCII characters`]);
  return token;
}
