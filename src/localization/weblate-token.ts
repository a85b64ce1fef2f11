import { FileRefusedError, MAX_SECRET_FILE_BYTES, readBoundedFile, readBoundedFileSync } from '../shared/bounded-file.js';
import type { LocalizationConfig } from '../config/schema.js';
import { ConfigError } from '../shared/errors.js';
import { watchFiles, type FileWatch } from '../shared/file-watch.js';
import type { SecretSet } from '../shared/secrets.js';

/** The current localization token (undefined = none configured), plus reload and close. */
export interface TokenSource {
  (): string | undefined;
  /** Re-reads `tokenFile` (SIGHUP, or after a 401); keeps the old token if the file is bad. Resolves when done; never rejects. */
  reload(): Promise<void>;
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

  // Re-reads run off the main thread, one at a time, at most one more queued behind it (a FIFO or
  // a hung file system must not freeze the event loop: the start-up read above may block, a
  // re-read never does).
  const readOnce = () => readBoundedFile(file!, MAX_SECRET_FILE_BYTES)
    .then((text) => {
      current = checked(text.trim(), where(file!));
      options.secrets.add(current);
    }, (err: unknown) => {
      throw new ConfigError([`${where(file!)}: ${err instanceof FileRefusedError ? err.reason : 'cannot be read'}`]);
    })
    .catch((err: unknown) => options.onError?.(err as Error));
  let tail: Promise<void> = Promise.resolve();
  let queued = false;
  const reload = (): Promise<void> => {
    if (file === undefined) return Promise.resolve();
    if (queued) return tail;
    queued = true;
    tail = tail.then(() => {
      queued = false;
      return readOnce();
    });
    return tail;
  };

  let watcher: FileWatch | undefined;
  if (file !== undefined && options.watch !== false) {
    watcher = watchFiles([file], () => void reload(), { persistent: false, onError: (_dir, err) => options.onError?.(err) });
  }

  const source = (() => current) as TokenSource;
  source.reload = reload;
  source.close = () => {
    watcher?.close();
    watcher = undefined;
  };
  return source;
}

const where = (file: string) => `localization.tokenFile (B2B_L10N_TOKEN_FILE): ${file}`;

/** Problems are ConfigErrors naming the key, so `run` and `translation` exit 2 listing them. */
function readToken(file: string): string {
  let text: string;
  try {
    text = readBoundedFileSync(file, MAX_SECRET_FILE_BYTES);
  } catch (err) {
    throw new ConfigError([`${where(file)}: ${err instanceof FileRefusedError ? err.reason : 'cannot be read'}`]);
  }
  return checked(text.trim(), where(file));
}

/** A token with CR/LF or non-ASCII would make the header write throw (docs/traps.md T14). */
function checked(token: string, where: string): string {
  if (token.length === 0) throw new ConfigError([`${where}: the token is empty`]);
  if (!/^[\x21-\x7e]+$/.test(token)) throw new ConfigError([`${where}: the token has spaces, control or non-ASCII characters`]);
  return token;
}
