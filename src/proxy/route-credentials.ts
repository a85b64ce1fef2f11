import type { CompiledAttachments, PreparedAttachments } from './attach.js';

/** Credentials for one route, resolved once per token generation. */
export interface RouteCredentials {
  readonly prepared: PreparedAttachments;
  /** Token generation the credentials belong to (for 401 handling). */
  readonly generation: number;
}

/** Where a route gets its credentials. `current()` is the synchronous hot path. */
export interface CredentialSource {
  current(): RouteCredentials | undefined;
  /** Waits for credentials or rejects with a SidecarError saying why there are none. */
  acquire(): Promise<RouteCredentials>;
  /**
   * Present for routes whose token can be renewed: called once after an upstream 401. Resolves
   * with newer credentials to replay with, or undefined when there are none (renewal throttled
   * or the auth server failing): the 401 is then passed back rather than replayed with the
   * token the service just rejected.
   */
  renewAfterUnauthorized?(used: RouteCredentials, path?: string): Promise<RouteCredentials | undefined>;
  /** Present for renewable routes: a request with `used` got an answer other than 401 (per response: cheap). */
  accepted?(used: RouteCredentials): void;
}

/** The token-manager surface the proxy needs (see token-manager.ts). */
export interface TokenSource<S extends TokenLike = TokenLike> {
  current(): S | undefined;
  acquire(): S | Promise<S>;
  invalidate(generation: number, path?: string): Promise<S>;
  accepted?(generation: number): void;
}

export interface TokenLike {
  readonly value: string;
  readonly generation: number;
  readonly apiKey: string;
  readonly rkObjectId?: string | undefined;
}

/**
 * The service route's credentials: the current token plus the ApiKey/rkObjectId it was obtained
 * with, rendered through the attachment templates once per token and reused by every request.
 */
export function tokenCredentials(tokens: TokenSource, attachments: CompiledAttachments): CredentialSource {
  let lastToken: TokenLike | undefined;
  let last: RouteCredentials | undefined;
  const wrap = (token: TokenLike): RouteCredentials => {
    if (token !== lastToken || !last) {
      last = {
        prepared: attachments.prepare({ token: token.value, apiKey: token.apiKey, rkObjectId: token.rkObjectId }),
        generation: token.generation,
      };
      lastToken = token;
    }
    return last;
  };
  return {
    current() {
      const token = tokens.current();
      return token && wrap(token);
    },
    async acquire() {
      return wrap(await tokens.acquire());
    },
    async renewAfterUnauthorized(used, path) {
      const token = await tokens.invalidate(used.generation, path);
      // invalidate() settles to the held token when it may not renew; that one was just rejected.
      return token.generation > used.generation ? wrap(token) : undefined;
    },
    accepted: (used) => tokens.accepted?.(used.generation),
  };
}

/**
 * Credentials from a static-or-file value without a lifecycle (the localization token): the
 * prepared form is recomputed only when the value changes.
 */
export function staticCredentials(read: () => PreparedAttachments | undefined, missing: () => Error): CredentialSource {
  return {
    current: () => {
      const prepared = read();
      return prepared && { prepared, generation: 0 };
    },
    async acquire() {
      const prepared = read();
      if (!prepared) throw missing();
      return { prepared, generation: 0 };
    },
  };
}
