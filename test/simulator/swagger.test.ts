import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, test, type TestContext } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { Agent, request } from 'undici';
import { createB2bSimulator, type B2bSimulator } from '../../src/simulator/b2b-simulator.js';
import { GENTOKEN_PATH } from '../../src/simulator/gentoken.js';
import { loadTrustedCas, trustContext } from '../../src/shared/tls.js';
import { createTokenClient } from '../../src/token/token-client.js';
import { testTls } from '../helpers/tls.js';

/* The simulator and the token client are checked against the shipped Swagger 2.0 document, so
   neither can drift from the documented token operation. */

const SWAGGER_FILE = fileURLToPath(new URL('../../config/b2b-auth.swagger.yaml', import.meta.url));
const API_KEY = 'swagger-test-api-key';
const PASSWORD = 'swagger-test-password';

type Schema = Record<string, unknown>;
interface SwaggerDoc {
  swagger: string;
  schemes: string[];
  basePath: string;
  security: Array<Record<string, string[]>>;
  securityDefinitions: Record<string, { type: string; in: string; name: string }>;
  paths: Record<string, Record<string, any>>;
  definitions: Record<string, Schema>;
}

const tls = await testTls();
const ca = loadTrustedCas(tls.caFile);
const dispatcher = new Agent({ connect: { secureContext: trustContext(ca) } });
after(() => dispatcher.close());
// validate() checks the document against the Swagger 2.0 schema and resolves the $refs.
const doc = (await SwaggerParser.validate(SWAGGER_FILE)) as unknown as SwaggerDoc;
const schemas = compileDefinitions(doc.definitions);
const operation = doc.paths['/b2b/v1/auth/gentoken']?.['post'];

/**
 * Swagger 2.0 schemas are not JSON Schema: `x-nullable: true` means null is also allowed.
 * Property maps are walked separately so property names are never taken for keywords.
 */
function toJsonSchema(schema: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key.startsWith('x-')) continue;
    if (key === 'properties') {
      out[key] = Object.fromEntries(Object.entries(value as Record<string, Schema>).map(([n, s]) => [n, toJsonSchema(s)]));
    } else if (key === 'items' && typeof value === 'object' && value !== null) {
      out[key] = toJsonSchema(value as Schema);
    } else {
      out[key] = value;
    }
  }
  if (schema['x-nullable'] === true) out['type'] = [schema['type'], 'null'];
  return out;
}

function compileDefinitions(definitions: Record<string, Schema>): Record<string, ValidateFunction> {
  // ajv-formats ships CommonJS with `default` on the module object under NodeNext.
  const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;
  const ajv = new Ajv({ strict: true, allErrors: true });
  addFormats(ajv, ['int64']);
  return Object.fromEntries(Object.entries(definitions).map(([name, s]) => [name, ajv.compile(toJsonSchema(s))]));
}

function assertMatches(name: string, value: unknown): void {
  const validate = schemas[name];
  assert.ok(validate, `definition ${name} exists`);
  assert.ok(validate(value), `${name}: ${JSON.stringify(validate.errors)} for ${JSON.stringify(value)}`);
}

async function startSim(t: TestContext): Promise<B2bSimulator> {
  const sim = createB2bSimulator({ apiKey: API_KEY, password: PASSWORD, ttlSeconds: 900, tls });
  t.after(() => sim.stop());
  await sim.start();
  return sim;
}

async function gentoken(sim: B2bSimulator, body: string, apiKey = API_KEY): Promise<{ status: number; json: unknown }> {
  const res = await request(sim.url + GENTOKEN_PATH, {
    dispatcher, method: 'POST', headers: { 'content-type': 'application/json', apikey: apiKey }, body,
  });
  return { status: res.statusCode, json: JSON.parse(await res.body.text()) };
}

test('the document is valid Swagger 2.0 and describes BackAuth as the seed does', () => {
  assert.equal(doc.swagger, '2.0');
  assert.deepEqual(doc.schemes, ['https']);
  assert.equal(doc.basePath + '/b2b/v1/auth/gentoken', GENTOKEN_PATH);
  assert.deepEqual(doc.securityDefinitions['ApiKeyAuth'], {
    type: 'apiKey', in: 'header', name: 'ApiKey', description: 'Key issued by the support team.',
  });
  assert.deepEqual(doc.security, [{ ApiKeyAuth: [] }]);
  assert.equal(operation.operationId, 'BackAuth');
  assert.deepEqual(operation.tags, ['BackAuth']);
  assert.deepEqual(operation.consumes, ['application/json']);
  assert.deepEqual(operation.produces, ['application/json']);
  assert.deepEqual(Object.keys(operation.responses).sort(), ['200', '401']);
  assert.deepEqual(operation.parameters[0].schema, doc.definitions['Back2BackAuthRequest']);
  assert.deepEqual(operation.responses['200'].schema, doc.definitions['AuthResult']);
  assert.deepEqual(operation.responses['401'].schema, doc.definitions['ErrorMessage']);
});

test('the compiled schemas enforce the seed: nullable refreshToken, integer ttl, no extra properties', () => {
  assertMatches('AuthResult', { token: 't', refreshToken: null, aliveSecondsTtl: 900 });
  assertMatches('AuthResult', { token: 't', refreshToken: 'r', aliveSecondsTtl: 900 });
  assert.equal(schemas['AuthResult']!({ token: 't', refreshToken: null, aliveSecondsTtl: 1.5 }), false);
  assert.equal(schemas['AuthResult']!({ token: 't', aliveSecondsTtl: 900 }), false);
  assert.equal(schemas['AuthResult']!({ token: null, refreshToken: null, aliveSecondsTtl: 900 }), false);
  assert.equal(schemas['AuthResult']!({ token: 't', refreshToken: null, aliveSecondsTtl: 900, extra: 1 }), false);
  assert.equal(schemas['Back2BackAuthRequest']!({ password: 'p', rkObjectId: 'x' }), false);
  assert.equal(schemas['ErrorMessage']!({ message: null }), false);
});

test("the simulator's 200 and 401 answers match AuthResult and ErrorMessage", async (t) => {
  const sim = await startSim(t);
  const ok = await gentoken(sim, JSON.stringify({ password: PASSWORD }));
  assert.equal(ok.status, 200);
  assertMatches('AuthResult', ok.json);
  const rejections = [
    gentoken(sim, JSON.stringify({ password: 'wrong' })),
    gentoken(sim, JSON.stringify({ password: PASSWORD }), 'wrong-key'),
    gentoken(sim, JSON.stringify({ password: PASSWORD, extra: true })),
    gentoken(sim, 'not json'),
  ];
  for (const reply of await Promise.all(rejections)) {
    assert.equal(reply.status, 401);
    assertMatches('ErrorMessage', reply.json);
  }
  sim.faults.failNextTokenRequests(1, 401);
  const injected = await gentoken(sim, JSON.stringify({ password: PASSWORD }));
  assert.equal(injected.status, 401);
  assertMatches('ErrorMessage', injected.json);
  // The garbage fault exists to break clients: it must really fall outside AuthResult.
  sim.faults.failNextTokenRequests(1, 'garbage');
  assert.equal(schemas['AuthResult']!((await gentoken(sim, JSON.stringify({ password: PASSWORD }))).json), false);
});

test("the token client's gentoken request matches Back2BackAuthRequest and carries the ApiKey header", async (t) => {
  const sim = await startSim(t);
  const client = createTokenClient({ baseUrl: sim.url, ca, timeoutMs: 5_000 });
  t.after(() => client.close());
  const result = await client.requestToken({ apiKey: API_KEY, password: PASSWORD, version: 1 });
  assertMatches('AuthResult', result);
  const captured = sim.stats.lastTokenRequest;
  assert.ok(captured, 'the simulator captured the request');
  assert.equal(captured.method.toLowerCase(), 'post');
  const mediaType = String(captured.headers['content-type']).split(';')[0]!.trim();
  assert.ok(operation.consumes.includes(mediaType), `content-type ${mediaType}`);
  assertMatches('Back2BackAuthRequest', JSON.parse(captured.body));
  const scheme = doc.securityDefinitions['ApiKeyAuth']!;
  assert.equal(scheme.in, 'header');
  assert.equal(captured.headers[scheme.name.toLowerCase()], API_KEY);
});
