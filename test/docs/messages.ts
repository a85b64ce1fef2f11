import { readFileSync } from 'node:fs';

/**
 * The texts the sidecar itself answers with or reports (error bodies, /readyz and /healthz
 * messages, raw refusals), read from the code so the troubleshooting guide cannot fall behind it:
 * test/docs/docs.test.ts checks that each one is explained there. The extraction points
 * are listed here; a new place that writes an error body belongs in this list.
 */
const SOURCES: ReadonlyArray<{ file: string; returns?: boolean; literals?: RegExp }> = [
  { file: 'src/proxy/proxy-handler.ts' },
  { file: 'src/proxy/admit.ts' },
  // The credential set a request chooses (400/403), and the /readyz reasons naming a set.
  { file: 'src/proxy/credential-choice.ts', literals: /^no credential set chosen/ },
  { file: 'src/parts/sidecar-status.ts' },
  { file: 'src/proxy/forward.ts' },
  { file: 'src/proxy/listener/listener.ts' },
  { file: 'src/proxy/listener/request-protocol.ts' },
  { file: 'src/proxy/request-target.ts', returns: true },
  { file: 'src/upstream/upstream-error.ts' },
  { file: 'src/observability/admin.ts' },
  // /readyz and /healthz reasons are returned by these functions.
  { file: 'src/token/token-manager.ts', returns: true },
  { file: 'src/token/answers/failure-reasons.ts', returns: true },
  { file: 'src/sidecar.ts' },
  { file: 'src/localization/localization-part.ts' },
  // /readyz shows a gentoken answer of the `http` cause in the token client's own words: every
  // literal there that starts so (the bare status, a redirect, the mutual-TLS pages).
  { file: 'src/token/token-client.ts', literals: /^auth server answered/ },
];

const LITERAL = /'((?:\\.|[^'\\])*)'|`((?:\\.|[^`\\])*)`/g;
/** Call sites and fields whose string argument is a message a client or an operator sees. */
const SITES = [
  /\bmessage: ('(?:\\.|[^'\\])*'|`(?:\\.|[^`\\])*`)/g,
  /\brespond\(\d{3}, ('(?:\\.|[^'\\])*'|`(?:\\.|[^`\\])*`)/g,
  /\b(?:rawAnswer|refuseAfterPending)\(socket, \d{3}, ('(?:\\.|[^'\\])*')/g,
  /\brefuseConnection\(socket, '[a-z_]+', \d{3}, ('(?:\\.|[^'\\])*')/g,
  /\breason: ('(?:\\.|[^'\\])*'|`(?:\\.|[^`\\])*`)/g,
  /new TokenUnavailableError\(('(?:\\.|[^'\\])*'|`(?:\\.|[^`\\])*`)/g,
];

/** The fixed part of a message: a template's text before its first `${…}`, unescaped. */
function fixedPart(literal: string): string {
  return literal.split('${')[0]!.replace(/\\(.)/g, '$1').trim().replace(/[\s:(;,]+$/, '');
}

/** Every message, with the file it comes from. */
export function sidecarMessages(root: URL): Map<string, string> {
  const out = new Map<string, string>();
  const add = (text: string, file: string) => {
    // Words, not identifiers or single tokens: a message has at least two words.
    if (text.length >= 8 && /[a-z] [a-z]/i.test(text)) out.set(text, file);
  };
  for (const { file, returns, literals } of SOURCES) {
    const src = readFileSync(new URL(file, root), 'utf8');
    for (const re of SITES) for (const m of src.matchAll(re)) add(fixedPart(m[1]!.slice(1, -1)), file);
    if (literals) {
      for (const lit of src.matchAll(LITERAL)) {
        const text = fixedPart(lit[1] ?? lit[2]!);
        if (literals.test(text)) add(text, file);
      }
    }
    // A raw refusal whose message is chosen by a condition: every literal in the call.
    for (const call of src.matchAll(/\brawAnswer\(socket, status, ([^\n]*)\);/g)) {
      for (const lit of call[1]!.matchAll(LITERAL)) add(fixedPart(lit[1] ?? lit[2]!), file);
    }
    if (!returns) continue;
    // A return statement up to its `;`, reading string literals whole (they may contain `;`).
    for (const statement of src.matchAll(/\breturn ((?:'(?:\\.|[^'\\])*'|`(?:\\.|[^`\\])*`|[^;'`])*);/g)) {
      for (const lit of statement[1]!.matchAll(LITERAL)) add(fixedPart(lit[1] ?? lit[2]!), file);
    }
  }
  return out;
}
