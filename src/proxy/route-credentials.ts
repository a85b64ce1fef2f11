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
   * Present for routes whose token can be renewed: called once after an upstream 401 (a first
   * attempt's) on `path`. Resolves with newer credentials to replay with, or undefined when the
   * 401 is to be passed back (the path's own 401, renewal throttled, the auth server failing)
   * rather than replayed with the token the service just rejected.
   */
  renewAfterUnauthorized?(used: RouteCredentials, path: string, method?: string): Promise<RouteCredentials | undefined>;
  /**
   * Present for renewable routes: a request `method` with `used` on `path` was answered `status`
   * (every answer but a first 401; a replay names the credentials it replaced in `replayOf`). Per
   * response: cheap (the method is passed along, not looked at, unless a 401 is being judged).
   * The method and the query are part of what the 401 judgement remembers (token/answers/request-key.ts).
   */
  answered?(used: RouteCredentials, status: number, path: string, replayOf?: RouteCredentials, method?: string): void;
  /**
   * Present for renewable routes: the renewal after a 401 on `path` gave `fresh`, but the request
   * could not be sent again (a streamed body, or its copy given up), so no replay tells whether it
   * helped: the next 401 there with `fresh` is that answer.
   */
  unreplayed?(fresh: RouteCredentials, path: string, method?: string): void;
}

/** The token-manager surface the proxy needs (see token-manager.ts). */
export interface TokenSource<S extends TokenLike = TokenLike> {
  current(): S | undefined;
  acquire(): S | Promise<S>;
  invalidate(generation: number, path: string, method?: string): Promise<S | undefined>;
  answered?(generation: number, status: number, path: string, replayOf?: number, method?: string): void;
  unreplayed?(fresh: number, path: string, method?: string): void;
}

export interface TokenLike {
  readonly value: string;
  readonly generation: number;
  readonly apiKey: string;
  readonly rkObjectId?: string | undefined;
}

/** Where values derived from a token are registered for redaction (shared/secrets.ts SecretSet). */
export interface DerivedSecrets {
  addToken(value: string): void;
}

/**
 * The service route's credentials: the current token plus the ApiKey/rkObjectId it was obtained
 * with, rendered through the attachment templates once per token and reused by every request.
 * What the rendering derives from them (the base64 of a Basic pair) is registered in `secrets`
 * before the credentials are handed out, so no log line can carry it (attach.ts, `secrets`).
 */
export function tokenCredentials(tokens: TokenSource, attachments: CompiledAttachments, secrets: DerivedSecrets): CredentialSource {
  let lastToken: TokenLike | undefined;
  let last: RouteCredentials | undefined;
  const wrap = (token: TokenLike): RouteCredentials => {
    if (token !== lastToken || !last) {
      const prepared = attachments.prepare({ token: token.value, apiKey: token.apiKey, rkObjectId: token.rkObjectId });
      for (const value of prepared.secrets) secrets.addToken(value);
      last = { prepared, generation: token.generation };
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
    async renewAfterUnauthorized(used, path, method) {
      const token = await tokens.invalidate(used.generation, path, method);
      // Only a newer token is worth a replay: the one just rejected would earn a second 401.
      return token !== undefined && token.generation > used.generation ? wrap(token) : undefined;
    },
    answered: (used, status, path, replayOf, method) => tokens.answered?.(used.generation, status, path, replayOf?.generation, method),
    unreplayed: (fresh, path, method) => tokens.unreplayed?.(fresh.generation, path, method),
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
