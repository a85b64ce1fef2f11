import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { probeWith, type ProbeAnswer } from '../../src/doctor/probe-check.js';
import { createLogger } from '../../src/observability/logger.js';
import { compileAttachments, type AttachVars } from '../../src/proxy/attach.js';
import { tokenCredentials, type TokenLike } from '../../src/proxy/route-credentials.js';
import { ATTACHMENT_KINDS, type Attachment, type AttachmentKind } from '../../src/shared/attachment.js';
import { SecretSet } from '../../src/shared/secrets.js';
import { createUndiciEngine } from '../../src/upstream/undici-engine.js';
import type { ProxyEngine } from '../../src/upstream/engine.js';

/**
 * Attachments own their secrets (src/proxy/attach.ts, `secrets`): for every kind, whatever a
 * prepared header, query parameter or cookie carries of the token or the ApiKey is scrubbed from
 * log lines (the logger's SecretSet, fed as the sidecar feeds it) and from what doctor shows of
 * an answer that echoes it. The property: the same templates prepared with two different secret
 * pairs give the same text once scrubbed, so no part that depends on a secret survives, whatever
 * the kind computed from it (a base64, a hash, ...). A kind that forgets to register a derived
 * value fails here; SAMPLES must name every kind, so a new kind cannot be left out.
 */
const SAMPLES: { [K in AttachmentKind]: (first: string, second: string) => Extract<Attachment, { in: K }> } = {
  header: (first) => ({ in: 'header', name: 'X-Credential', value: first }),
  query: (first) => ({ in: 'query', name: 'credential', value: first }),
  cookie: (first) => ({ in: 'cookie', name: 'credential', value: first }),
  basic: (user, password) => ({ in: 'basic', user, password }),
};

/** Deterministic: a failure reproduces (mulberry32). */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SECRET_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=';
/** Literal template text: short words and separators no secret holds, so no run of it looks like a piece of one. */
const LITERALS = ['Bearer ', 'Token ', 'k=', ' ', ':', ';', '!', 'x ', ''];
const PLACEHOLDERS = ['{token}', '{apiKey}', '{rkObjectId}'];

function pick<T>(next: () => number, list: readonly T[]): T {
  return list[Math.floor(next() * list.length)]!;
}

function secret(next: () => number): string {
  const length = 16 + Math.floor(next() * 48);
  let out = '';
  for (let i = 0; i < length; i++) out += pick(next, [...SECRET_CHARS]);
  return out;
}

/** A template: literals and placeholders, carrying the token or the ApiKey at least once. */
function template(next: () => number): string {
  let out = pick(next, LITERALS);
  const parts = 1 + Math.floor(next() * 3);
  for (let i = 0; i < parts; i++) out += pick(next, PLACEHOLDERS) + pick(next, LITERALS);
  return /\{token\}|\{apiKey\}/.test(out) ? out : `${out}{token}`;
}

/** The SecretSet the sidecar (and doctor) holds for these values: the ApiKey a credential, the token a token. */
function secretsFor(vars: AttachVars): SecretSet {
  const secrets = new SecretSet();
  secrets.add(vars.apiKey);
  secrets.addToken(vars.token);
  return secrets;
}

/** The route's credentials for one token, prepared as the proxy prepares them (registering what they derive). */
function prepare(entries: readonly Attachment[], vars: AttachVars, secrets: SecretSet) {
  const token: TokenLike = { value: vars.token, apiKey: vars.apiKey, rkObjectId: vars.rkObjectId, generation: 1 };
  const credentials = tokenCredentials({ current: () => token, acquire: () => token, invalidate: async () => undefined }, compileAttachments(entries), secrets);
  return credentials.current()!.prepared;
}

/** Every value a prepared set puts on the wire, one by one: header values, query and cookie values (encoded and decoded). */
function wireValues(prepared: ReturnType<typeof prepare>): string[] {
  const values = prepared.headers.map(([, value]) => value);
  for (const pair of prepared.query.split('&').filter(Boolean)) {
    const value = pair.slice(pair.indexOf('=') + 1);
    values.push(value, decodeURIComponent(value));
  }
  for (const pair of prepared.cookie.split('; ').filter(Boolean)) {
    const value = pair.slice(pair.indexOf('=') + 1);
    values.push(value, decodeURIComponent(value));
  }
  return values;
}

/** One log line through the sidecar's logger with `secrets`. */
function logged(secrets: SecretSet, text: string): string {
  let out = '';
  const stream = new Writable({ write(chunk, _enc, done) { out += String(chunk); done(); } });
  createLogger({ level: 'info', secrets, stream }).info(`upstream said: ${text}`);
  return JSON.parse(out).message as string;
}

describe('attachments own their secrets: log lines', () => {
  for (const kind of ATTACHMENT_KINDS) {
    it(`${kind}: every prepared value is scrubbed, whatever the templates and secrets`, () => {
      const next = random(0x5eed + kind.length);
      for (let round = 0; round < 300; round++) {
        const entry = SAMPLES[kind](template(next), template(next));
        const rkObjectId = pick(next, [undefined, 'obj 7', 'Ø-12']);
        const a: AttachVars = { token: secret(next), apiKey: secret(next), rkObjectId };
        const b: AttachVars = { token: secret(next), apiKey: secret(next), rkObjectId };
        const [secretsA, secretsB] = [secretsFor(a), secretsFor(b)];
        const valuesA = wireValues(prepare([entry], a, secretsA));
        const valuesB = wireValues(prepare([entry], b, secretsB));
        assert.equal(valuesA.length, valuesB.length);
        valuesA.forEach((valueA, i) => {
          const lineA = logged(secretsA, valueA);
          const lineB = logged(secretsB, valuesB[i]!);
          assert.equal(lineA, lineB, `${JSON.stringify(entry)}: a part of "${valueA}" that depends on the secrets reaches the log:\n${lineA}\n${lineB}`);
          assert.equal(lineA.includes(valueA), false, `${JSON.stringify(entry)}: "${valueA}" is logged as is`);
        });
      }
    });
  }
});

describe('attachments own their secrets: doctor', () => {
  let server: Server;
  let engine: ProxyEngine;
  before(async () => {
    // Echoes every header, query and cookie value it was sent, in the body and the challenge.
    server = createServer((req: IncomingMessage, res) => {
      const url = new URL(req.url ?? '/', 'http://service.test');
      const sent = [...Object.values(req.headers).map(String), ...url.searchParams.values(), url.search].join(' | ');
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': `Bearer error_description="${sent.replace(/["\\]/g, '')}"` });
      res.end(JSON.stringify({ message: `refused ${sent}` }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    engine = createUndiciEngine({ baseUrl: new URL(`http://127.0.0.1:${port}`), ca: undefined, maxSockets: 4, keepAliveTimeoutMs: 1000, headersTimeoutMs: 5000, bodyTimeoutMs: 5000 });
  });
  after(async () => {
    await engine.close();
    await new Promise((r) => server.close(r));
  });

  const probe = (entry: Attachment, vars: AttachVars): Promise<ProbeAnswer> => {
    // doctor's own SecretSet knows the token and the ApiKey; what the attachment derives it learns from the probe.
    const secrets = secretsFor(vars);
    return probeWith({ engine, path: '/probe', base: 'http://service.test', vars, redact: (text) => secrets.redactFragments(text) }, [entry]);
  };

  for (const kind of ATTACHMENT_KINDS) {
    it(`${kind}: an answer echoing every prepared value shows nothing that depends on the secrets`, async () => {
      const next = random(0xd0c + kind.length);
      for (let round = 0; round < 20; round++) {
        const entry = SAMPLES[kind](template(next), template(next));
        const a: AttachVars = { token: secret(next), apiKey: secret(next) };
        const b: AttachVars = { token: secret(next), apiKey: secret(next) };
        const [answerA, answerB] = [await probe(entry, a), await probe(entry, b)];
        assert.match(answerA.message ?? '', /\[REDACTED\]/, 'the echo carried the values');
        assert.deepEqual(answerA, answerB, `${JSON.stringify(entry)}: doctor shows a part that depends on the secrets`);
      }
    });
  }
});
