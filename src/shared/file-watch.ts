import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

/** A running watch of some files; `close()` is idempotent. */
export interface FileWatch {
  close(): void;
}

/**
 * Calls `onChange` (debounced by `debounceMs`) when any of `files` may have changed. The parent
 * directories are watched, not the files: Kubernetes swaps a mounted secret by re-pointing the
 * `..data` symlink in its directory, which a watch on the file itself never sees. Events about
 * other names in those directories are ignored. A directory that cannot be watched is reported
 * through `onError` and skipped (the caller's reload on SIGHUP still works).
 */
export function watchFiles(
  files: readonly string[],
  onChange: () => void,
  options: { debounceMs?: number; persistent?: boolean; onError?: (dir: string, err: Error) => void } = {},
): FileWatch {
  const names = new Set(files.map((f) => basename(f)));
  const watchers: FSWatcher[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  const fire = () => {
    if (closed) return;
    if (!options.debounceMs) return onChange();
    clearTimeout(timer);
    timer = setTimeout(onChange, options.debounceMs);
  };
  for (const dir of new Set(files.map((f) => dirname(f)))) {
    try {
      const w = watch(dir, { persistent: options.persistent ?? true }, (_event, changed) => {
        if (changed === null || names.has(changed) || changed === '..data') fire();
      });
      w.on('error', (err) => options.onError?.(dir, err));
      watchers.push(w);
    } catch (err) {
      options.onError?.(dir, err as Error);
    }
  }
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      for (const w of watchers.splice(0)) w.close();
    },
  };
}
