import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times (almost always 100). */
export const CLK_TCK = (() => {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
})();

/** utime+stime of one process (all its threads), in clock ticks; undefined once it is gone. */
export function cpuTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/**
 * The machine's aggregate CPU ticks from /proc/stat: `steal` is time a virtual machine's CPUs
 * were runnable but the host ran something else, which inflates every latency figure.
 */
export function machineTicks(): { total: number; steal: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n').find((l) => l.startsWith('cpu '));
    const fields = line!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal [guest guest_nice, already counted in user/nice]
    return { total: fields.slice(0, 8).reduce((a, b) => a + b, 0), steal: fields[7] ?? 0 };
  } catch {
    return undefined;
  }
}

/** Summed CPU time of several processes, in microseconds. */
export function cpuMicros(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) ticks += cpuTicks(pid) ?? 0;
  return (ticks * 1e6) / CLK_TCK;
}

/** A `kB` field of /proc/<pid>/status (VmRSS, VmHWM, RssAnon, ...) in bytes; undefined when unreadable. */
export function statusBytes(pid: number, field: 'VmRSS' | 'VmHWM' | 'RssAnon'): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

export function sumStatus(pids: readonly number[], field: 'VmRSS' | 'VmHWM' | 'RssAnon'): number {
  let total = 0;
  for (const pid of pids) total += statusBytes(pid, field) ?? 0;
  return total;
}

/**
 * Memory only this process pays for. `rssAnon` (/proc/<pid>/status RssAnon: heap, stacks, V8's
 * spaces, native buffers) is what grows with the work done; `uss` (/proc/<pid>/smaps_rollup
 * Private_Clean + Private_Dirty) also counts file pages no other process maps, so it includes the
 * node binary's resident pages whenever this is the only node process on the machine. File-backed
 * pages shared between processes (the binary on a node running many pods) are in neither.
 */
export interface PrivateMemory {
  rssAnon: number;
  uss: number;
}

/** Parses the `kB` fields of a /proc status or smaps_rollup text. */
export function kbFields(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^(\w+):\s+(\d+) kB$/gm)) out.set(m[1]!, Number(m[2]) * 1024);
  return out;
}

/** glibc reserves each thread arena's heap as a region aligned to its 64 MB maximum (HEAP_MAX_SIZE). */
const ARENA_ALIGN = 64n * 1024n * 1024n;

/**
 * Groups /proc/PID/smaps by kind of mapping: Rss and private (clean + dirty) bytes each. An
 * anonymous mapping that starts on a 64 MB boundary is counted as a malloc arena of a thread (V8's
 * GC and compiler workers, libuv's pool): glibc aligns those heaps so; V8's own pages are not.
 * A heuristic, good enough to tell native allocator growth from the JavaScript heap.
 */
export function smapsByKind(pid: number): Map<string, { rss: number; priv: number }> {
  const out = new Map<string, { rss: number; priv: number }>();
  const text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  for (const block of text.split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/)) {
    const head = block.slice(0, block.indexOf('\n'));
    const parts = head.trim().split(/\s+/);
    const perms = parts[1] ?? '';
    const path = parts.slice(5).join(' ');
    const startAddress = BigInt(`0x${(parts[0] ?? '0-').split('-')[0]}`);
    const kind = path === ''
      ? (perms.includes('x') ? 'anonymous, executable (V8 code space, wasm)'
        : startAddress % ARENA_ALIGN === 0n && perms.startsWith('rw') ? 'malloc arenas of threads (64 MB aligned)'
          : 'anonymous (V8 heap, main thread\'s mmap allocations, buffers)')
      : path === '[heap]' ? '[heap] (malloc brk, main arena)'
        : path.startsWith('[stack') ? '[stack]'
          : path === process.execPath || path.endsWith('/node') ? 'node binary (file-backed)'
            : path.startsWith('[') ? path : 'other files (libc, libstdc++, ICU data, ...)';
    const f = kbFields(block);
    const cur = out.get(kind) ?? { rss: 0, priv: 0 };
    cur.rss += f.get('Rss') ?? 0;
    cur.priv += (f.get('Private_Clean') ?? 0) + (f.get('Private_Dirty') ?? 0);
    out.set(kind, cur);
  }
  return out;
}

/** The thread count of a process, or undefined once it is gone. */
export function threadCount(pid: number): number | undefined {
  try {
    return Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  } catch {
    return undefined;
  }
}

/** RssAnon and USS of one process, bytes; undefined once it is gone. */
export function privateMemory(pid: number): PrivateMemory | undefined {
  try {
    const status = kbFields(readFileSync(`/proc/${pid}/status`, 'utf8'));
    const rollup = kbFields(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return { rssAnon: status.get('RssAnon') ?? 0, uss: (rollup.get('Private_Clean') ?? 0) + (rollup.get('Private_Dirty') ?? 0) };
  } catch {
    return undefined;
  }
}

/** Summed private memory of several processes (nginx: master + workers). */
export function sumPrivate(pids: readonly number[]): PrivateMemory | undefined {
  let found = false;
  const total = { rssAnon: 0, uss: 0 };
  for (const pid of pids) {
    const p = privateMemory(pid);
    if (!p) continue;
    found = true;
    total.rssAnon += p.rssAnon;
    total.uss += p.uss;
  }
  return found ? total : undefined;
}

/**
 * Samples private memory of `pids` every `intervalMs` until `stop()`, keeping the highest of
 * each figure (the kernel keeps a high-water mark only for the whole RSS, VmHWM).
 */
export function privatePeakSampler(pids: readonly number[], intervalMs = 100): { stop(): PrivateMemory | undefined } {
  let peak: PrivateMemory | undefined;
  const sample = () => {
    const p = sumPrivate(pids);
    if (!p) return;
    peak = peak ? { rssAnon: Math.max(peak.rssAnon, p.rssAnon), uss: Math.max(peak.uss, p.uss) } : p;
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

/** Direct children of a process (e.g. nginx's workers), from /proc/<pid>/task/<tid>/children. */
export function childPids(pid: number): number[] {
  try {
    const out: number[] = [];
    for (const line of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${line}/children`, 'utf8').trim();
      if (text) out.push(...text.split(/\s+/).map(Number));
    }
    return out;
  } catch {
    return [];
  }
}

/** Whether an executable is on PATH. */
export function hasCommand(name: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export const MB = 1024 * 1024;
