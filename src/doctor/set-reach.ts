import { defaultSet, type CredentialSet } from '../config/credential-sets.js';
import type { Config } from '../config/schema.js';
import { formatPath } from '../config/walk.js';
import { adminBaseUrl } from '../observability/admin-client.js';
import { CREDENTIAL_HEADER } from '../proxy/stripped-names.js';
import { compileIpGuard } from '../shared/ip-guard.js';

/** How a request reaches one credential set through the running sidecar: where, under what prefix, with what header. */
export interface SetReach {
  /** The plain-HTTP listener the request goes to. */
  listener: URL;
  /** The set's `pathPrefix` in front of the path ('' for none). */
  prefix: string;
  /** `B2B-Credential: <id>` when the header is how the set is chosen. */
  headers: Record<string, string>;
  /** For the report: `127.0.0.1:8080 with the path prefix /objects-b`. */
  how: string;
}

/** Why doctor cannot send a request the running sidecar would serve with this set's token. */
export interface SetUnreachable {
  unreachable: string;
  hint: string;
}

/**
 * The way an app's request chooses `set` on a running sidecar (proxy/credential-choice.ts and
 * parts/proxy-handler.ts): the set's own listener; else, on the shared listener (which also serves
 * a set with a listener of its own through its prefix or the header), its path prefix; else the
 * shared listener bare, when the set is the default (no selector); else `B2B-Credential`, which
 * the sidecar honours only from the set's `headerAllow`. Without this a probe for one set went out
 * with another set's token (docs/traps.md T98).
 */
export function reachSet(listen: Config['listen'], set: CredentialSet, sets: readonly CredentialSet[]): SetReach | SetUnreachable {
  const own = formatPath(set.path);
  // Its own listener, unless doctor cannot connect to it: then the shared listener may still serve it.
  let ownProblem: SetUnreachable | undefined;
  if (set.listen?.kind === 'socket') {
    ownProblem = { unreachable: `its own listener is the unix socket ${set.listen.socket}, which doctor does not probe through`, hint: `send the probe with curl --unix-socket ${set.listen.socket}, or run doctor with --own-token` };
  } else if (set.listen?.port === 0) {
    ownProblem = { unreachable: `${own}.listen.port is 0, so its port was picked at start`, hint: `set ${own}.listen.port, or run doctor with --own-token` };
  } else if (set.listen) {
    const listener = adminBaseUrl(set.listen);
    return { listener, prefix: '', headers: {}, how: `its own listener ${listener.host}` };
  }
  if (listen.port === 0) return ownProblem ?? { unreachable: 'listen.port is 0 in this config, so its port was picked at start', hint: 'set listen.port, or run doctor with --own-token' };
  const listener = adminBaseUrl(listen);
  if (set.pathPrefix !== undefined) return { listener, prefix: set.pathPrefix, headers: {}, how: `${listener.host} with the path prefix ${set.pathPrefix}` };
  if (defaultSet(sets)?.id === set.id) return { listener, prefix: '', headers: {}, how: listener.host };
  // Doctor connects from the address it connects to (loopback, or this host's own address): the
  // sidecar would answer a source outside headerAllow 403, which the probe would blame on the service.
  const from = listener.hostname.replace(/^\[(.*)\]$/, '$1');
  if (set.headerAllow && compileIpGuard(set.headerAllow).allows(from)) {
    return { listener, prefix: '', headers: { [CREDENTIAL_HEADER]: set.id }, how: `${listener.host} with ${CREDENTIAL_HEADER}: ${set.id}` };
  }
  if (ownProblem) return ownProblem;
  return { unreachable: `${own} is chosen by the ${CREDENTIAL_HEADER} header, which the sidecar takes only from its headerAllow, and that leaves out ${from}, where doctor sends from`, hint: `add ${from} to ${own}.headerAllow, or run doctor with --own-token` };
}
