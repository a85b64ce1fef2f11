import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { dropH2cOffer, headWithoutUpgrade, offersOnlyH2c } from '../../src/proxy/listener/h2c-upgrade.js';
import { protocolRefusal } from '../../src/proxy/listener/request-protocol.js';

describe('h2c upgrade offers', () => {
  it('ignores only offers of h2c alone, in any case', () => {
    assert.equal(offersOnlyH2c('h2c'), true);
    assert.equal(offersOnlyH2c(' H2C '), true);
    assert.equal(offersOnlyH2c('h2c, websocket'), false);
    assert.equal(offersOnlyH2c('websocket'), false);
    assert.equal(offersOnlyH2c('h2'), false);
    assert.equal(offersOnlyH2c(undefined), false);
  });

  it('rebuilds the head byte for byte without Upgrade, HTTP2-Settings and their Connection tokens', () => {
    const req = {
      method: 'POST', url: '/a?b=%C3%A9', httpVersion: '1.1',
      // latin1 strings, as Node's parser produces them from raw bytes
      rawHeaders: ['Host', 'x', 'Connection', 'Upgrade, HTTP2-Settings, keep-alive', 'Upgrade', 'h2c', 'HTTP2-Settings', 'AAMA', 'X-Raw', 'caf\xe9', 'Content-Length', '3'],
    } as unknown as IncomingMessage;
    assert.equal(headWithoutUpgrade(req).toString('latin1'),
      'POST /a?b=%C3%A9 HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nX-Raw: caf\xe9\r\nContent-Length: 3\r\n\r\n');
    assert.ok(headWithoutUpgrade(req).includes(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0d])), 'a byte above 0x7f stays one byte');
  });

  it('drops a Connection header that named nothing else', () => {
    const headers: IncomingMessage['headers'] = { connection: 'Upgrade, HTTP2-Settings', upgrade: 'h2c', 'http2-settings': 'AAMA', host: 'x' };
    dropH2cOffer(headers);
    assert.deepEqual(headers, { host: 'x' });
  });
});

describe('protocol checks the parser leaves to the listener', () => {
  const req = (major: number, minor: number, headers: Record<string, string> = {}, rawHeaders: string[] = ['Host', 'x']) =>
    ({ httpVersionMajor: major, httpVersionMinor: minor, headers, rawHeaders }) as unknown as IncomingMessage;

  it('accepts HTTP/1.0, HTTP/1.1 and chunked alone', () => {
    assert.equal(protocolRefusal(req(1, 1)), undefined);
    assert.equal(protocolRefusal(req(1, 0, {}, [])), undefined);
    assert.equal(protocolRefusal(req(1, 1, { 'transfer-encoding': 'CHUNKED' })), undefined);
  });

  it('names the refusal for every other version, coding and framing', () => {
    assert.equal(protocolRefusal(req(0, 9))?.status, 505);
    assert.equal(protocolRefusal(req(2, 0))?.status, 505);
    assert.equal(protocolRefusal(req(1, 1, { 'transfer-encoding': 'cow, chunked' }))?.status, 501);
    assert.equal(protocolRefusal(req(1, 1, { 'transfer-encoding': 'chunked, chunked' }))?.status, 501);
    assert.equal(protocolRefusal(req(1, 0, { 'transfer-encoding': 'chunked' }))?.status, 400);
    assert.equal(protocolRefusal(req(1, 1, {}, ['Host', 'x', 'HOST', 'y']))?.message, 'more than one Host header');
  });
});
