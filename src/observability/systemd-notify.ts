import { spawn } from 'node:child_process';
import { statusLine } from './status.js';
import type { Clock, TimerHandle } from '../shared/clock.js';
import type { Logger } from './logger.js';

/**
 * systemd's notify protocol for `Type=notify` (deploy/systemd/b2b-sidecar.service): READY=1 once
 * the sidecar holds its first token, STATUS= with the readiness message, STOPPING=1 when it
 * drains, WATCHDOG=1 while the token loop is live. Node cannot send on a datagram unix socket, so
 * each message is one run of the `systemd-notify` binary, which blocks on a barrier until systemd
 * has read it (docs/traps.md T37). Without NOTIFY_SOCKET every method is a no-op: no timer, no child.
 */

/** Runs `systemd-notify` with these arguments and environment; resolves once it exited 0. */
export type NotifySpawn = (args: readonly string[], env: NodeJS.ProcessEnv) => Promise<void>;

export interface NotifyState {
  /** /readyz: ready once a token is held. */
  health(): { ready: boolean; reason?: string; warnings?: string[] };
  /** /healthz: false when the token loop is dead or stuck. */
  live(): { live: boolean; reason?: string };
}

export interface SystemdNotifierOptions {
  /** NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID and PATH are read. */
  env: NodeJS.ProcessEnv;
  /** The sidecar's pid: sent as MAINPID=, and compared with WATCHDOG_PID. */
  pid?: number;
  clock: Clock;
  logger: Pick<Logger, 'warn' | 'debug'>;
  spawn?: NotifySpawn;
  /** READY=1 without a token after this long, as the old `wait --timeout 60s` did: see the unit's comment. */
  readyWithoutTokenAfterMs?: number;
}

export interface SystemdNotifier {
  /** The listeners are up: READY=1 once `state` is ready, STATUS= as it changes, the watchdog pings. */
  started(state: NotifyState): void;
  /** A drain (or stop) began: STOPPING=1. The watchdog keeps pinging while the drain runs. */
  stopping(): void;
  /** Stops every timer; a message already queued is still sent. */
  close(): void;
}

/** How often readiness is looked at: the delay READY=1 adds to the unit's start. */
const STATUS_CHECK_MS = 500;
/** A changed STATUS= waits this long after the previous one: some reasons count seconds down. */
const STATUS_MIN_INTERVAL_MS = 5_000;
/** systemd-notify waits at most 5 s on its barrier; a child still running after this is killed. */
const CHILD_TIMEOUT_MS = 10_000;
/** The unit's TimeoutStartSec= must be longer (test/deploy/systemd.test.ts). */
export const DEFAULT_READY_WITHOUT_TOKEN_AFTER_MS = 60_000;

const NO_NOTIFIER: SystemdNotifier = Object.freeze({ started() {}, stopping() {}, close() {} });

export function createSystemdNotifier(options: SystemdNotifierOptions): SystemdNotifier {
  const socket = options.env.NOTIFY_SOCKET;
  if (!socket) return NO_NOTIFIER;
  return new Notifier(options, socket);
}

/** Half of WATCHDOG_USEC in ms, as sd_watchdog_enabled(3) advises; undefined when not for this process. */
export function watchdogPingMs(env: NodeJS.ProcessEnv, pid: number | undefined): number | undefined {
  const usec = Number(env.WATCHDOG_USEC);
  if (!env.WATCHDOG_USEC || !Number.isSafeInteger(usec) || usec <= 0) return undefined;
  // systemd sets WATCHDOG_PID to the main pid; a process that inherited the variable must not ping.
  if (env.WATCHDOG_PID !== undefined && env.WATCHDOG_PID !== String(pid)) return undefined;
  return Math.max(1, Math.floor(usec / 2000));
}

class Notifier implements SystemdNotifier {
  readonly #options: SystemdNotifierOptions;
  readonly #spawn: NotifySpawn;
  readonly #childEnv: NodeJS.ProcessEnv;
  readonly #pingMs: number | undefined;
  /** Fields waiting for the next run, in order; a newer STATUS= replaces an older one. */
  readonly #pending = new Map<string, string>();
  #inFlight = false;
  #state: NotifyState | undefined;
  #ready = false;
  #stopping = false;
  #closed = false;
  #lastStatus: string | undefined;
  #lastStatusAt = -Infinity;
  #statusTimer: TimerHandle | undefined;
  #pingTimer: TimerHandle | undefined;
  #fallbackTimer: TimerHandle | undefined;
  #failureLogged = false;
  #withheld = false;

  constructor(options: SystemdNotifierOptions, socket: string) {
    this.#options = options;
    this.#spawn = options.spawn ?? spawnSystemdNotify;
    // Only what systemd-notify needs: the sidecar's environment may hold credentials.
    this.#childEnv = { NOTIFY_SOCKET: socket, ...(options.env.PATH ? { PATH: options.env.PATH } : {}) };
    this.#pingMs = watchdogPingMs(options.env, options.pid);
  }

  started(state: NotifyState): void {
    if (this.#state || this.#closed) return;
    this.#state = state;
    this.#checkStatus();
    if (!this.#ready && !this.#stopping) {
      const after = this.#options.readyWithoutTokenAfterMs ?? DEFAULT_READY_WITHOUT_TOKEN_AFTER_MS;
      this.#fallbackTimer = this.#options.clock.setTimeout(() => {
        if (this.#ready || this.#stopping || this.#closed) return;
        const reason = state.health().reason ?? 'no token yet';
        this.#markReady(`not ready: ${reason} (started without a token after ${after / 1000} s; /readyz answers 503 until one arrives)`);
      }, after);
    }
    if (this.#pingMs !== undefined) this.#ping();
  }

  stopping(): void {
    if (this.#stopping || this.#closed) return;
    this.#stopping = true;
    this.#options.clock.clearTimeout(this.#statusTimer);
    this.#options.clock.clearTimeout(this.#fallbackTimer);
    // Not yet sent: systemd would read READY=1 after STOPPING=1 in the same message.
    this.#pending.delete('READY');
    this.#queue([['STOPPING', '1'], ['STATUS', 'shutting down: draining']]);
  }

  close(): void {
    this.#closed = true;
    const clock = this.#options.clock;
    clock.clearTimeout(this.#statusTimer);
    clock.clearTimeout(this.#pingTimer);
    clock.clearTimeout(this.#fallbackTimer);
    this.#pending.delete('WATCHDOG');
  }

  #checkStatus(): void {
    if (this.#stopping || this.#closed || !this.#state) return;
    const health = this.#state.health();
    const status = statusLine(health);
    const now = this.#options.clock.now();
    if (health.ready && !this.#ready) this.#markReady(status);
    else if (status !== this.#lastStatus && now - this.#lastStatusAt >= STATUS_MIN_INTERVAL_MS) this.#sendStatus(status, []);
    this.#statusTimer = this.#options.clock.setTimeout(() => this.#checkStatus(), STATUS_CHECK_MS);
  }

  #markReady(status: string): void {
    this.#ready = true;
    this.#options.clock.clearTimeout(this.#fallbackTimer);
    this.#sendStatus(status, [['READY', '1']]);
  }

  #sendStatus(status: string, before: [string, string][]): void {
    this.#lastStatus = status;
    this.#lastStatusAt = this.#options.clock.now();
    this.#queue([...before, ['STATUS', status]]);
  }

  /**
   * WATCHDOG=1 only while the token loop is live: a stuck loop gets the unit restarted. Once
   * stopping, the loop is stopped on purpose: the pings go on (TimeoutStopSec= bounds the stop)
   * and nothing is withheld or warned about.
   */
  #ping(): void {
    if (this.#closed || !this.#state) return;
    const live = this.#stopping ? { live: true } : this.#state.live();
    if (live.live) {
      this.#withheld = false;
      this.#queue([['WATCHDOG', '1']]);
    } else if (!this.#withheld) {
      this.#withheld = true;
      this.#options.logger.warn('the token loop is not live: withholding the systemd watchdog ping, so systemd restarts the sidecar', { reason: live.reason });
    }
    this.#pingTimer = this.#options.clock.setTimeout(() => this.#ping(), this.#pingMs!);
  }

  #queue(fields: [string, string][]): void {
    for (const [key, value] of fields) {
      this.#pending.delete(key); // re-inserted last: the newest value, in the order it was queued
      // One field per line in the datagram: a line break in a value would start a new field.
      this.#pending.set(key, value.replace(/[\0-\x1f\x7f]+/g, ' '));
    }
    this.#flush();
  }

  /** At most one systemd-notify in flight; what queues meanwhile goes out together after it. */
  #flush(): void {
    if (this.#inFlight || this.#pending.size === 0) return;
    const args = [...(this.#options.pid !== undefined ? [`--pid=${this.#options.pid}`] : []), ...[...this.#pending].map(([k, v]) => `${k}=${v}`)];
    this.#pending.clear();
    this.#inFlight = true;
    let run: Promise<void>;
    try {
      run = this.#spawn(args, this.#childEnv);
    } catch (err) {
      run = Promise.reject(err);
    }
    run.catch((err: unknown) => this.#failed(err)).finally(() => {
      this.#inFlight = false;
      this.#flush();
    });
  }

  #failed(err: unknown): void {
    const reason = err instanceof Error ? err.message : String(err);
    if (this.#failureLogged) {
      this.#options.logger.debug('systemd-notify failed', { reason });
      return;
    }
    this.#failureLogged = true;
    this.#options.logger.warn('systemd-notify failed: systemd may not see this sidecar\'s readiness or watchdog pings (logged once)', { reason });
  }
}

/** The real NotifySpawn: `systemd-notify ARGS`, never with --no-block (docs/traps.md T37). */
export const spawnSystemdNotify: NotifySpawn = (args, env) =>
  new Promise((resolve, reject) => {
    const child = spawn('systemd-notify', args, { env, stdio: ['ignore', 'ignore', 'pipe'], timeout: CHILD_TIMEOUT_MS, killSignal: 'SIGKILL' });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      if (stderr.length < 500) stderr += d;
    });
    child.once('error', reject); // not installed (ENOENT), or no process could be made
    child.once('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`systemd-notify ${signal ? `was killed by ${signal}` : `exited ${code}`}${stderr.trim() ? `: ${stderr.trim().slice(0, 300)}` : ''}`));
    });
  });
