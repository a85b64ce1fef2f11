import type { Logger } from '../../observability/logger.js';
import { shellWord } from '../../shared/shell-word.js';
import { SUPERSEDED_WINDOW_MS, type SuspectForm } from './answer-rules.js';

/**
 * What the answer rules' verdicts (answer-rules.ts) tell the operator: the log lines as the
 * verdicts change, and the `/readyz` warning text while `token.attach` is suspect. No state: the
 * manager calls these when the rules say something changed.
 */
export class AnswerSignals {
  readonly #logger: Logger;
  readonly #configPath: string | undefined;

  constructor(logger: Logger, configPath: string | undefined) {
    this.#logger = logger;
    this.#configPath = configPath;
  }

  /**
   * `token.attach` became suspect: one error line with the exact doctor command. It is run beside
   * this sidecar, so it carries `--own-token`: without it doctor probes through this sidecar and
   * cannot try other presentations (doctor/through-sidecar.ts).
   */
  suspectEntered(form: SuspectForm, probePath: string, evidence: { answers: number; lastStatus: number }, fingerprint: string | undefined): void {
    const command = `b2b-sidecar doctor --config ${this.#configPath !== undefined ? shellWord(this.#configPath) : '<config file>'} --probe ${shellWord(shortPath(probePath))} --discover-attach --own-token`;
    if (form === 'unauthorized') {
      this.#logger.error(`freshly obtained tokens are rejected too, on several paths, and no request succeeds: token.attach probably presents the token in a way the service does not accept. Find the right way with: ${command}`, {
        fingerprint,
      });
    } else {
      this.#logger.error(`no request has succeeded since the token was obtained (${evidence.answers} answers on several paths, none 2xx or 304; the last was ${evidence.lastStatus}): token.attach probably presents the token in a way the service does not accept. Find the right way with: ${command}`, {
        fingerprint,
      });
    }
  }

  suspectCleared(generation: number): void {
    this.#logger.info('the service accepts the token again; token.attach is no longer suspect', { generation });
  }

  /** The `/readyz` warning while `token.attach` is suspect. */
  suspectWarning(form: SuspectForm, probePath: string): string {
    const probe = shellWord(shortPath(probePath));
    if (form === 'unauthorized') {
      return `requests get 401 even with freshly obtained tokens, on several paths, and none succeeds: token.attach probably presents the token in a way the service does not accept (b2b-sidecar doctor --probe ${probe} --discover-attach --own-token)`;
    }
    return `no request has succeeded since the token was obtained (only refusals such as 400, 403, 404 or a redirect, on several paths): token.attach probably presents the token in a way the service does not accept (b2b-sidecar doctor --probe ${probe} --discover-attach --own-token)`;
  }

  /** The superseded rule started to hold: once per episode. */
  supersededTripped(count: number): void {
    this.#logger.warn('tokens this process still holds are rejected long before they expire: another process is probably obtaining tokens with the same ApiKey (the service keeps one token per key). Give each replica its own ApiKey, or run one sidecar per key', {
      rejections: count, windowMinutes: SUPERSEDED_WINDOW_MS / 60_000,
    });
  }

  replayRefused(path: string, renewIntervalMs: number): void {
    this.#logger.warn('a freshly obtained token was rejected too; slowing down 401-triggered renewals', {
      path: shortPath(path), nextAllowedInSeconds: renewIntervalMs / 1000,
    });
  }

  pathOwn(path: string, method: string): void {
    this.#logger.debug('a fresh token was rejected on this path too; its 401s are the path\'s own once the token succeeds elsewhere', { method, path: shortPath(path) });
  }

  /** Logged with the method and the path without its query (the key also holds the query, which may name objects). */
  pathRemembered(path: string, method: string, forMinutes: number): void {
    this.#logger.info('the service answers 401 on this path even with a fresh token that other requests succeed with: its 401s are passed back without renewing', {
      method, path: shortPath(path), forMinutes,
    });
  }
}

/** A request path as logged and printed in the doctor command: without the query, at most 200 characters. */
export function shortPath(path: string): string {
  return path.split('?')[0]!.slice(0, 200) || '/';
}
