import { askAdmin, isSidecarAnswer, NOT_SIDECAR } from '../observability/admin-client.js';
import { adminTarget } from './admin-target.js';
import type { CommandIo } from './io.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './exit-codes.js';

/** Arguments of `wait`. */
export interface WaitArgs {
  config?: string;
  /** The admin listener's base URL (`http://127.0.0.1:9464`); from the config when absent. */
  admin?: string;
  /** `30s`, `500ms`, `2m` or plain seconds; default 30 s. */
  timeout?: string;
  /** Wait for this credential set alone (`/readyz?credential=<id>`), not for every set. */
  credential?: string;
  /** Between two asks of /readyz; tests shorten it. */
  intervalMs?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const INTERVAL_MS = 250;
const NO_ANSWER = 'no answer yet';
/** One ask may take this long (head and body) before it counts as no answer; never past the deadline. */
const ASK_TIMEOUT_MS = 2_000;

/**
 * `wait [--timeout 30s] [--admin URL] [--config FILE]`: blocks until the sidecar's `/readyz`
 * answers 200, for a script, a Kubernetes `postStart` hook or systemd's `ExecStartPost=` that must
 * not start the app before the sidecar holds a token (modelled on cloud-sql-proxy's `wait`).
 * `--credential <id>` waits for that credential set alone (`/readyz?credential=<id>`: the other
 * sets may still be without a token).
 * Exit codes: 0 ready (the sidecar's own 200, `{"status":"ready"}`); 1 not ready within the
 * timeout (the last readiness message on stderr, an answer that is not the sidecar's named as such);
 * 2 a bad option or configuration, or a credential set the sidecar does not have (its 404).
 */
export async function waitCommand(args: WaitArgs, io: CommandIo): Promise<number> {
  const timeoutMs = parseDuration(args.timeout ?? '30s');
  if (timeoutMs === undefined) {
    io.stderr.write(`wait: --timeout must be a duration such as 30s, 500ms or 2m, got ${JSON.stringify(args.timeout)}\n`);
    return EXIT_USAGE;
  }
  const base = await adminTarget('wait', args, io);
  if (typeof base === 'number') return base;
  const url = new URL('/readyz', base);
  if (args.credential !== undefined) url.searchParams.set('credential', args.credential);
  // An overall deadline: every ask is cut at it, so an answer dripping a byte at a time or a body
  // without end cannot hold `wait` past --timeout.
  const deadline = Date.now() + timeoutMs;
  let last = NO_ANSWER;
  for (;;) {
    const budget = Math.max(1, Math.min(ASK_TIMEOUT_MS, deadline - Date.now()));
    const answer = await askAdmin(url, budget);
    if (answer.status === 200 && !answer.failure && isSidecarAnswer('/readyz', answer)) {
      io.stdout.write(`ready: ${url.href} answered 200\n`);
      return EXIT_OK;
    }
    // The sidecar has no such set (404), or the id cannot be one (400): no wait can change that.
    if (args.credential !== undefined && (answer.status === 404 || answer.status === 400) && typeof answer.body?.message === 'string') {
      io.stderr.write(`wait: no credential set ${JSON.stringify(args.credential)} at ${base.href}: ${answer.body.message}\n`);
      return EXIT_USAGE;
    }
    // An ask the deadline cut short says less than the answer before it.
    if (answer.failure === 'timeout' && budget < ASK_TIMEOUT_MS && last !== NO_ANSWER) break;
    last = answer.failure === 'timeout' ? 'ask: timeout (no complete answer in time)'
      : answer.failure ?? (answer.status === 200 ? `${NOT_SIDECAR} /readyz (answered 200)` : `${answer.status}`);
    if (Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, Math.min(args.intervalMs ?? INTERVAL_MS, Math.max(0, deadline - Date.now()))));
  }
  io.stderr.write(`not ready after ${timeoutMs / 1000} s: ${url.href} last ${last}\n`);
  return EXIT_FAILURE;
}

/** Milliseconds of `30s`, `500ms`, `2m` or plain seconds; undefined when it is none of them. */
export function parseDuration(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]);
  const ms = m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000;
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}
