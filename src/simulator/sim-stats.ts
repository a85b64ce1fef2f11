import type { IncomingHttpHeaders } from 'node:http';

/** The last gentoken request exactly as received, so tests can check it against the Swagger schema. */
export interface CapturedTokenRequest {
  method: string;
  headers: IncomingHttpHeaders;
  /** The raw body as text (UTF-8). */
  body: string;
  /** The client's port: which process asked (a benchmark finds the pid of a fleet's minter from it). */
  remotePort?: number;
}

/**
 * Counters of what the simulator saw. Live: read them at any time; `reset()` zeroes them
 * (issued tokens stay valid).
 */
export class SimulatorStats {
  /** Every request to the gentoken path, including rejected and fault-injected ones. */
  tokenRequests = 0;
  /** Successful (200) gentoken answers. */
  tokensIssued = 0;
  /** Requests to the protected operations under /pub/b2b/v1/ (not gentoken). */
  apiRequests = 0;
  /** Protected-operation requests answered 401 (missing/wrong/expired/revoked token or ApiKey). */
  unauthorizedApiRequests = 0;
  /**
   * Protected-operation requests that presented a token this simulator did issue but which was
   * past its expiry on the injected clock. A correct sidecar keeps this at 0.
   */
  expiredTokenPresented = 0;
  /** Protected-operation requests that presented a token revoked by `revokeAll()`. */
  revokedTokenPresented = 0;
  lastTokenRequest: CapturedTokenRequest | undefined;

  reset(): void {
    this.tokenRequests = 0;
    this.tokensIssued = 0;
    this.apiRequests = 0;
    this.unauthorizedApiRequests = 0;
    this.expiredTokenPresented = 0;
    this.revokedTokenPresented = 0;
    this.lastTokenRequest = undefined;
  }

  /** The counters as plain JSON (the control API's view; the captured request holds secrets and is left out). */
  counters(): Record<string, number> {
    return {
      tokenRequests: this.tokenRequests,
      tokensIssued: this.tokensIssued,
      apiRequests: this.apiRequests,
      unauthorizedApiRequests: this.unauthorizedApiRequests,
      expiredTokenPresented: this.expiredTokenPresented,
      revokedTokenPresented: this.revokedTokenPresented,
    };
  }
}
