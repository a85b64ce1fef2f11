import type { SidecarStatus } from '../observability/status.js';
import { WarningsLog } from '../observability/warnings-log.js';
import type { TimerHandle } from '../shared/clock.js';
import type { Part } from '../shared/part.js';
import type { PartDeps } from './made.js';

/** How often the status's warnings are compared with the ones logged: a warning is logged within this. */
export const WARNINGS_CHECK_MS = 5_000;

/**
 * Logs the status's warnings as they appear and clear (observability/warnings-log.ts), read from
 * `status()` every {@link WARNINGS_CHECK_MS} on the injected clock: the log and the status cannot
 * disagree, whichever rule raised the warning.
 */
export function warningsLogPart(deps: Pick<PartDeps, 'clock' | 'logger'>, status: () => SidecarStatus): Part {
  const { clock } = deps;
  const log = new WarningsLog(deps.logger);
  let timer: TimerHandle | undefined;
  const tick = () => {
    try {
      const now = status();
      // A drain reports no warnings (only that it shuts down): they have not cleared, so stop here.
      if (now.state === 'shutting down') return;
      log.observe(now.warnings);
    } catch (err) {
      // A bare timer: a throw here would end the process, where /status would only answer 500.
      deps.logger.error('the warnings log could not read the status', { reason: (err as Error).message });
    }
    timer = clock.setTimeout(tick, WARNINGS_CHECK_MS);
  };
  return {
    name: 'warnings log',
    start() {
      timer = clock.setTimeout(tick, WARNINGS_CHECK_MS);
    },
    stop() {
      clock.clearTimeout(timer);
      timer = undefined;
    },
  };
}
