import { InvalidResponseError, TokenRefusedError, TokenRequestError, TokenUnauthorizedError } from '../shared/errors.js';
import { gentokenUrl, type AuthResult, type Credentials, type TokenClient, type TokenClientOptions } from '../token/token-client.js';
import { API_PREFIX } from '../shared/api-paths.js';
import type { DoctorStep } from './doctor-report.js';

/** The path users paste into baseUrl by mistake; gentoken then lives at …/pub/b2b/v1/pub/b2b/v1/…. */
const API_PATH = new RegExp(`${API_PREFIX.replace(/\//g, '\\/')}\\/?$`);
const REMOVE_API_PATH = `service.baseUrl must be the API root, without ${API_PREFIX} (the sidecar adds it): remove ${API_PREFIX} from it`;

/**
 * One gentoken call with the production client. Resolves with the step and, when it passed, the
 * AuthResult (the token is for the probe; it is never printed).
 */
export async function checkGentoken(client: TokenClient, credentials: Credentials, options: Pick<TokenClientOptions, 'baseUrl'>): Promise<{ step: DoctorStep; result?: AuthResult }> {
  const url = gentokenUrl(options);
  const { baseUrl } = options;
  const base = { step: 'gentoken' as const, url };
  try {
    const result = await client.requestToken(credentials);
    return { step: { ...base, ok: true, status: 200, detail: `POST ${url} → 200, token valid for ${result.aliveSecondsTtl} s` }, result };
  } catch (err) {
    return { step: { ...base, ok: false, ...describe(err, url, baseUrl) } };
  }
}

function describe(err: unknown, url: string, baseUrl: string): { detail: string; hint: string; status?: number } {
  const doubled = API_PATH.test(new URL(baseUrl).pathname);
  if (err instanceof TokenUnauthorizedError) {
    return {
      status: 401,
      detail: `POST ${url} → 401: ${err.serverMessage}`,
      // A service that checks the token before routing answers 401 for the doubled path too.
      hint: doubled
        ? REMOVE_API_PATH
        : 'the service rejected credentials.apiKey or credentials.password (or this machine\'s address): check them with the support team',
    };
  }
  if (err instanceof TokenRefusedError) {
    return {
      status: 403,
      detail: `POST ${url} → 403: ${err.serverMessage}`,
      hint: 'the service refused this host: its egress address is most likely not on the vendor\'s allow list; give the support team the egress address',
    };
  }
  if (err instanceof InvalidResponseError) {
    return {
      status: 200,
      detail: `POST ${url} → 200, but not an AuthResult: ${err.field} ${err.message.replace(/^invalid response: \S+ /, '')}`,
      hint: 'service.baseUrl may point at something other than the B2B service',
    };
  }
  const status = err instanceof TokenRequestError ? err.upstreamStatus : undefined;
  if (status === 404) {
    return {
      status,
      detail: `POST ${url} → 404`,
      hint: doubled
        ? REMOVE_API_PATH
        : `service.baseUrl must be the API root, without ${API_PREFIX}: gentoken is not at this address; check it with the support team`,
    };
  }
  if (status !== undefined && status >= 300 && status < 400) {
    const to = err instanceof TokenRequestError && err.location ? err.location : 'an address it did not give';
    return {
      status,
      detail: `POST ${url} → ${status} redirect to ${to} (not followed: it would re-send the password)`,
      hint: `if you trust ${to}, set service.baseUrl to its API root`,
    };
  }
  const kind = err instanceof TokenRequestError ? err.kind : undefined;
  if (kind === 'rate_limited') {
    const after = err instanceof TokenRequestError && err.retryAfter !== undefined ? ` (Retry-After: ${err.retryAfter})` : '';
    return { status, detail: `POST ${url} → ${status}${after}`, hint: 'the service asks to slow down: wait, and check that replicas sharing the ApiKey do not call gentoken too often (token.maxGentokenPerMinute)' };
  }
  if (err instanceof TokenRequestError && err.configuration) {
    // A TLS front's mutual-TLS page (400): no retry changes it, only the client certificate does.
    return { ...(status !== undefined ? { status } : {}), detail: `POST ${url} → ${status ?? 'refused'}: ${err.message.replace(/^auth server answered HTTP \d+: /, '')}`, hint: 'the service requires mutual TLS: set service.certFile and service.keyFile to the pair the vendor issued for this ApiKey, or ask the support team which CA they accept; retrying does not help' };
  }
  if (status !== undefined) {
    return { status, detail: `POST ${url} → ${status}`, hint: 'the service failed to issue a token: retry later, or tell the support team' };
  }
  const message = err instanceof Error ? err.message : String(err);
  if (kind === 'tls' && /client certificate/.test(message)) {
    // The server's verdict on this client (under TLS 1.3 it comes after the handshake), not ours on its certificate.
    return { detail: `POST ${url} failed: ${message}`, hint: 'the service requires mutual TLS: set service.certFile and service.keyFile to the pair the vendor issued for this ApiKey, or ask the support team which CA they accept' };
  }
  if (kind === 'tls') {
    return { detail: `POST ${url} failed: ${message}`, hint: 'the server certificate is not trusted: set service.caFile to the CA that signed it (or fix the name in service.baseUrl)' };
  }
  if (kind === 'dns') {
    return { detail: `POST ${url} failed: ${message}`, hint: 'the host name in service.baseUrl does not resolve: check its spelling and this host\'s DNS' };
  }
  if (kind === 'egress_proxy') {
    return { detail: `POST ${url} failed: ${message}`, hint: 'the forward proxy, not the service, failed: check service.proxy (or HTTPS_PROXY), its credentials (service.proxyAuthFile) and that it allows CONNECT to the service\'s port' };
  }
  if (kind === 'connection_refused') {
    return { detail: `POST ${url} failed: ${message}`, hint: 'nothing accepts connections at service.baseUrl: check the port and any egress proxy or firewall' };
  }
  return {
    detail: `POST ${url} failed: ${message}`,
    hint: /timed out/.test(message)
      ? 'the service did not answer within service.tokenTimeoutMs'
      : 'the connection failed after the connect step passed: retry, and check proxies or firewalls on the way',
  };
}
