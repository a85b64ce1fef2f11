import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileIpGuard, parseStrictCidr } from '../src/ip-guard.js';

describe('parseStrictCidr', () => {
  for (const ok of ['127.0.0.1', '127.0.0.1/32', '10.0.0.0/8', '::1', '::1/128', 'fd00::/8', '0.0.0.0/0', '::/0']) {
    it(`accepts ${ok}`, () => assert.ok(Array.isArray(parseStrictCidr(ok))));
  }
  for (const bad of ['127.1', '0177.0.0.1', '2130706433', '10.1/16', '10.0.0.0/33', '::1/129', '10.0.0.1/8', 'localhost', '', '1.2.3.4/8/9', '1.2.3.4/x']) {
    it(`rejects ${JSON.stringify(bad)} (PITFALLS 19)`, () => assert.equal(typeof parseStrictCidr(bad), 'string'));
  }
});

describe('source guard', () => {
  const guard = compileIpGuard(['127.0.0.1/32', '::1/128']);
  const judge = (peer: string | undefined, xff?: string) => guard.allows(guard.clientAddress(peer, xff));

  it('allows IPv4 and IPv6 loopback', () => {
    assert.equal(judge('127.0.0.1'), true);
    assert.equal(judge('::1'), true);
  });
  it('normalises an IPv4-mapped IPv6 peer from a dual-stack listener (PITFALLS 18)', () => {
    assert.equal(judge('::ffff:127.0.0.1'), true);
    assert.equal(judge('::ffff:10.0.0.1'), false);
  });
  it('denies other addresses, including the Istio sidecar source 127.0.0.6 (PITFALLS 20)', () => {
    assert.equal(judge('127.0.0.6'), false);
    assert.equal(judge('10.1.2.3'), false);
    assert.equal(judge('fe80::1'), false);
  });
  it('denies unparsable or missing peers', () => {
    assert.equal(judge(undefined), false);
    assert.equal(judge(''), false);
    assert.equal(judge('not-an-ip'), false);
    assert.equal(judge('127.1'), false);
  });
  it('ignores X-Forwarded-For when no proxy is trusted', () => {
    assert.equal(judge('10.0.0.1', '127.0.0.1'), false);
    assert.equal(judge('127.0.0.1', '10.9.9.9'), true);
    assert.equal(guard.peerOnly, true);
  });

  describe('with trusted proxies', () => {
    const g = compileIpGuard(['192.168.1.0/24'], ['10.0.0.0/8']);
    const client = (peer: string, xff?: string) => g.clientAddress(peer, xff);
    it('uses the rightmost untrusted X-Forwarded-For entry when the peer is trusted', () => {
      assert.equal(client('10.0.0.5', '1.2.3.4, 192.168.1.7, 10.0.0.9'), '192.168.1.7');
      assert.equal(g.allows(client('10.0.0.5', '1.2.3.4, 192.168.1.7')), true);
    });
    it('does not let a client forge its address by prepending entries', () => {
      assert.equal(g.allows(client('10.0.0.5', '192.168.1.7, 8.8.8.8')), false);
    });
    it('ignores X-Forwarded-For from an untrusted peer', () => {
      assert.equal(client('8.8.8.8', '192.168.1.7'), '8.8.8.8');
    });
    it('denies when an entry is unparsable', () => {
      assert.equal(client('10.0.0.5', 'garbage'), undefined);
      assert.equal(g.allows(client('10.0.0.5', 'garbage')), false);
    });
    it('uses the peer itself when it sent no header', () => {
      assert.equal(client('10.0.0.5'), '10.0.0.5');
    });
  });
});
