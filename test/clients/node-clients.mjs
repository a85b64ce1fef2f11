// Node's own http client against the sidecar (test/e2e/real-clients.test.ts runs this file): each case
// first asks the test's control server to revoke every token, then prints one JSON line.
import { request } from 'node:http';

const { SIDECAR, CONTROL } = process.env;
const BODY = `a=1&b=2&text=${'x'.repeat(4000)}`;

function send(method, path, body, chunked = false) {
  return new Promise((resolve, reject) => {
    const headers = body !== undefined && !chunked ? { 'content-length': Buffer.byteLength(body) } : {};
    const req = request(`${SIDECAR}${path}`, { method, headers, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    if (chunked) {
      // No length known: Node sends the body chunked, written in pieces like a stream.
      for (let i = 0; i < 4; i++) req.write(body.slice((i * body.length) / 4, ((i + 1) * body.length) / 4));
      req.end();
    } else req.end(body);
  });
}

const cases = [
  ['http GET', () => send('GET', '/pub/b2b/v1/echo/node')],
  ['http POST Content-Length', () => send('POST', '/pub/b2b/v1/echo/node', BODY)],
  ['http POST stream (chunked)', () => send('POST', '/pub/b2b/v1/echo/node', BODY, true)],
];
for (const [name, run] of cases) {
  try {
    await fetch(`${CONTROL}/revoke`, { method: 'POST' });
    const { status, text } = await run();
    let echo = {};
    try { echo = JSON.parse(text); } catch { /* not an echo */ }
    console.log(JSON.stringify({ case: name, status, bodyBytes: echo.bodyBytes ?? null }));
  } catch (err) {
    console.log(JSON.stringify({ case: name, error: String(err) }));
  }
}
