import { StoppedDuringStartError } from './errors.js';
import type { Part } from './part.js';

/**
 * The start/stop bookkeeping of something made of parts (token-refresher's run group): each
 * part is registered with its stop as soon as it exists, `stopAll()` runs the stops once, in
 * reverse order. A stop requested while parts are still starting (a signal during start-up)
 * makes the next `started()` throw {@link StoppedDuringStartError}, so start-up unwinds instead
 * of being overtaken by it.
 */
/** Where a failing stop is reported (the process logger; shared/ does not import it). */
interface StopWarnings {
  warn(message: string, fields: Record<string, unknown>): void;
}

export class RunGroup {
  readonly #stops: Array<() => Promise<void> | void> = [];
  readonly #logger: StopWarnings;
  #stopRequested = false;
  #stopped: Promise<void> | undefined;
  readonly #stopping = new AbortController();

  /**
   * Aborted when a stop is requested: a part that waits on something long (a key decrypted on a
   * worker thread) gives it up, and its failure then reads as the stop (see `started`).
   */
  get signal(): AbortSignal {
    return this.#stopping.signal;
  }

  constructor(logger: StopWarnings) {
    this.#logger = logger;
  }

  /**
   * Waits for `part`, registers its stop, then gives up if a stop was requested meanwhile. A part
   * already being made is always awaited and registered first, so a stop that lands while it is
   * made still stops it (checking before would leave it running). To avoid making a part at all
   * once a stop was requested, call `alive()` before making it.
   */
  async started<T>(part: T | Promise<T>, stop: (part: T) => Promise<void> | void): Promise<T> {
    let value: T;
    try {
      value = await part;
    } catch (err) {
      this.alive(); // failed because a stop was requested meanwhile: that is what start-up reports
      throw err;
    }
    this.#stops.push(() => stop(value));
    this.alive();
    return value;
  }

  /**
   * Starts `parts` in order, each once the one before has settled; each part's stop is registered
   * as it has started (see `started`), so `stopAll()` stops them in reverse order. Gives up with
   * {@link StoppedDuringStartError} before the next part once a stop was requested, and with the
   * error of a part that failed (the parts already started are stopped by `stopAll()`).
   */
  async run(parts: readonly Part[]): Promise<void> {
    for (const part of parts) {
      this.alive();
      await this.started(part.start(), () => part.stop?.());
    }
  }

  /** Throws {@link StoppedDuringStartError} once a stop was requested. */
  alive(): void {
    if (this.#stopRequested) throw new StoppedDuringStartError();
  }

  /** Makes start-up give up at its next step; `stopAll()` does this too. */
  requestStop(): void {
    this.#stopRequested = true;
    this.#stopping.abort();
  }

  /** Runs every registered stop once, newest first; one failing does not keep the others from running. */
  stopAll(): Promise<void> {
    this.requestStop();
    this.#stopped ??= (async () => {
      for (const stop of this.#stops.reverse()) {
        try {
          await stop();
        } catch (err) {
          this.#logger.warn('error while stopping', { reason: (err as Error).message });
        }
      }
    })();
    return this.#stopped;
  }
}
