import type { PacedTrigger } from './pacing/gentoken-pacer.js';
import type { TokenSnapshot } from './token-state.js';

/** The gentoken attempt in flight; `held` while the budget or a Retry-After holds it back. */
export interface InFlight {
  readonly attempt: Promise<TokenSnapshot>;
  readonly held: boolean;
}

/**
 * A call the service's answers ask for: a 401's renewal, or a judgement's (which leaves half of
 * the budget to revocations, gentoken-pacer.ts).
 */
export type AnswerCall = 'upstream 401' | 'judgement';

/**
 * How everyone who needs a token gets one: the manager, the 401 flow (unauthorized-flow.ts) and
 * the renewal loop's timers all ask here, and only here does a gentoken call start. The local
 * implementation is token-source.ts; a source backed by a store shared by several processes
 * implements the same (docs/architecture.md, "The token source: where a shared store sits").
 */
export interface TokenAcquisition {
  /** The usable token now: a synchronous read of memory, never a wait. */
  current(): TokenSnapshot | undefined;
  /** Joins the attempt in flight, or starts the one attempt for `trigger` (paced: Retry-After, budget). */
  acquire(trigger: PacedTrigger): Promise<TokenSnapshot>;
  /** The attempt in flight, if any. */
  inflight(): InFlight | undefined;
  /** True when a call `call` asks for may go out at `now` (monotonic ms); a 401's refusal is counted as deferred. */
  mayCall(call: AnswerCall, now: number): boolean;
  /** Waits for `attempt` at most the token timeout, then hands out only what current() would. */
  bounded(attempt: Promise<TokenSnapshot>): Promise<TokenSnapshot>;
  /** Monotonic ms the current token's scheduled renewal is due at; Infinity before the first token. */
  renewDueAt(): number;
}
