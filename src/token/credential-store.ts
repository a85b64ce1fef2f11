import type { Logger } from '../observability/logger.js';
import { credentialFileProblem, credentialFromFile, credentialValueProblem } from '../config/credential-content.js';
import { ConfigError } from '../shared/errors.js';
import type { SecretSet } from '../shared/secrets.js';
import type { Credentials } from './token-client.js';
import { watchFiles, type FileWatch } from '../shared/file-watch.js';
import { FileRefusedError, MAX_SECRET_FILE_BYTES, readBoundedFile } from '../shared/bounded-file.js';

export type { Credentials } from './token-client.js';

/** The keys of one credential set (config/credential-sets.ts) the store reads. */
export interface CredentialKeys {
  apiKey?: string | undefined;
  apiKeyFile?: string | undefined;
  password?: string | undefined;
  passwordFile?: string | undefined;
  rkObjectId?: string | undefined;
}

/** The integrator's credentials, re-read from their files on change and on SIGHUP. */
export interface CredentialStore {
  /** The values in use; the same object until something changes (cheap to call per request). */
  current(): Credentials;
  /**
   * Re-reads the files. Resolves true when the credentials differ from what the previous
   * `reload()` saw (including a change the watcher already applied). Never rejects: an unreadable
   * or empty file is logged and the previous values are kept.
   */
  reload(): Promise<boolean>;
  /**
   * Watches the files' directories; calls `onChange` after a change has been applied. The
   * watchers keep the event loop alive until `close()`.
   */
  watch(onChange: () => void): void;
  /** Stops the watchers. Idempotent. */
  close(): void;
  /** Seconds a re-read has been running when that is longer than it should ever take, else undefined (readiness warns). */
  stuckSeconds(): number | undefined;
}

/** A re-read of two small regular files takes milliseconds; this long means a hung file system. */
const STUCK_RELOAD_SECONDS = 10;

/** Secret files are often swapped in several steps; wait for the directory to settle. */
const DEBOUNCE_MS = 200;

interface Source {
  key: 'apiKey' | 'password';
  env: string;
  inline?: string;
  file?: string;
}

/**
 * Loads the credentials (inline values or files) and registers every value with `secrets`.
 * Rejects with a ConfigError naming the key when a credential is missing, empty or unreadable.
 */
export async function createCredentialStore(
  cfg: CredentialKeys,
  { logger, secrets, now = Date.now, at }: {
    logger: Logger; secrets: SecretSet; now?: () => number;
    /** Where the set stands in a list of sets (`credentials[1]`): problems name its keys so, without the environment variables (config/credential-sets.ts). */
    at?: string;
  },
): Promise<CredentialStore> {
  const sources: Source[] = [
    { key: 'apiKey', env: 'B2B_API_KEY', inline: cfg.apiKey, file: cfg.apiKeyFile },
    { key: 'password', env: 'B2B_PASSWORD', inline: cfg.password, file: cfg.passwordFile },
  ];
  const base = at ?? 'credentials';

  async function readAll(): Promise<{ apiKey: string; password: string }> {
    const problems: string[] = [];
    const values: Record<string, string> = {};
    for (const s of sources) {
      const envName = at === undefined ? ` (${s.env}${s.file ? '_FILE' : ''})` : '';
      const label = s.file ? `${base}.${s.key}File${envName}` : `${base}.${s.key}${envName}`;
      const carrier = s.key === 'apiKey' ? 'header' : 'body';
      let value = s.inline;
      let problem: string | undefined;
      if (s.file) {
        let text: string;
        try {
          // Only a regular file, at most a few KiB, without ever blocking (bounded-file.ts).
          text = await readBoundedFile(s.file, MAX_SECRET_FILE_BYTES);
        } catch (err) {
          const reason = err instanceof FileRefusedError ? err.reason : `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
          problems.push(`${label}: ${s.file} ${reason}`);
          continue;
        }
        problem = credentialFileProblem(text, carrier);
        if (problem) problem = `${s.file} ${problem}`;
        value = credentialFromFile(text);
      } else if (!value) {
        problem = `missing (set ${base}.${s.key} or ${base}.${s.key}File)`;
      } else {
        problem = credentialValueProblem(value, carrier);
      }
      if (problem) {
        // The value is not kept, but registered: a later log line must not show it either.
        secrets.add(value);
        problems.push(`${label}: ${problem}`);
        continue;
      }
      if (value) {
        secrets.add(value);
        values[s.key] = value;
      }
    }
    if (problems.length) throw new ConfigError(problems);
    return { apiKey: values.apiKey!, password: values.password! };
  }

  const first = await readAll();
  let creds: Credentials = { ...first, ...(cfg.rkObjectId ? { rkObjectId: cfg.rkObjectId } : {}), version: 1 };
  let reportedVersion = creds.version;
  const files = sources.flatMap((s) => (s.file ? [s.file] : []));
  const watches: FileWatch[] = [];
  let closed = false;

  let running: Promise<boolean> | undefined;
  let again = false;
  let startedAt: number | undefined;
  /**
   * One re-read at a time: watch events and SIGHUPs during one ask for at most one more, so
   * re-reads never pile up (each holds file descriptors and, while reading, a pool thread).
   */
  function refresh(): Promise<boolean> {
    if (running) {
      again = true;
      return running;
    }
    startedAt = now();
    running = refreshOnce().finally(() => {
      running = undefined;
      startedAt = undefined;
      if (again) {
        again = false;
        void refresh();
      }
    });
    return running;
  }

  /** Re-reads and applies; true when a value changed. Failures keep the old values. */
  async function refreshOnce(): Promise<boolean> {
    if (files.length === 0) return false;
    let next: { apiKey: string; password: string };
    try {
      next = await readAll();
    } catch (err) {
      const problems = err instanceof ConfigError ? err.problems : [(err as Error).message];
      logger.warn('credential files unreadable; keeping the current credentials', { problems });
      return false;
    }
    if (next.apiKey === creds.apiKey && next.password === creds.password) return false;
    const changed = [next.apiKey !== creds.apiKey && 'apiKey', next.password !== creds.password && 'password'].filter(Boolean);
    creds = { ...creds, ...next, version: creds.version + 1 };
    logger.info('credentials changed', { changed, version: creds.version });
    return true;
  }

  return {
    current: () => creds,
    stuckSeconds() {
      const running = startedAt === undefined ? 0 : (now() - startedAt) / 1000;
      return running >= STUCK_RELOAD_SECONDS ? Math.round(running) : undefined;
    },
    async reload() {
      await refresh();
      const changed = creds.version !== reportedVersion;
      reportedVersion = creds.version;
      return changed;
    },
    watch(onChange) {
      if (closed || files.length === 0) return;
      watches.push(watchFiles(files, () => {
        void refresh().then((changed) => {
          if (changed && !closed) onChange();
        });
      }, {
        debounceMs: DEBOUNCE_MS,
        onError: (dir, err) => logger.warn('cannot watch credential directory; changes apply on SIGHUP only', { dir, reason: err.message }),
      }));
    },
    close() {
      closed = true;
      for (const w of watches.splice(0)) w.close();
    },
  };
}
