import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileIpGuard, coversEveryone, parseStrictCidr } from '../../src/shared/ip-guard.js';

describe('parseStrictCidr', () => {
  for (const ok of ['127.0.0.1', '127.0.0.1/32', '10.0.0.0/8', '::1', '::1/128', 'fd00::/8', '0.0.0.0/0', '::/0']) {
    it(`accepts ${ok}`, () => assert.ok(Array.isArray(parseStrictCidr(ok))));
  }
  for (const bad of ['127.1', '0177.0.0.1', '2130706433', '10.1/16', '10.0.0.0/33', '::1/129', '10.0.0.1/8', 'localhost', '', '1.2.3.4/8/9', '1.2.3.4/x']) {
    it(`rejects ${JSON.stringify(bad)} (docs/traps.md T19)`, () => assert.equal(typeof parseStrictCidr(bad), 'string'));
  }
});

describe('parseStrictCidr with an IPv6 zone index', () => {
  it('names the zone instead of reading it as host bits (fe80::1%eth0 said "did you mean fe80::1/128?")', () => {
    assert.equal(parseStrictCidr('fe80::1%eth0'), 'has a zone index (%eth0); write the address without it, e.g. fe80::1');
    assert.equal(parseStrictCidr('fe80::%eth0/64'), 'has a zone index (%eth0); write the address without it, e.g. fe80::/64');
  });
});

describe('source guard', () => {
  const guard = compileIpGuard(['127.0.0.1/32', '::1/128']);
  const judge = (peer: string | undefined, xff?: string) => guard.allows(guard.clientAddress(peer, xff));

  it('allows IPv4 and IPv6 loopback', () => {
    assert.equal(judge('127.0.0.1'), true);
    assert.equal(judge('::1'), true);
  });
  it('normalises an IPv4-mapped IPv6 peer from a dual-stack listener (docs/traps.md T18)', () => {
    assert.equal(judge('::ffff:127.0.0.1'), true);
    assert.equal(judge('::ffff:10.0.0.1'), false);
  });
  it('denies other addresses, including the Istio sidecar source 127.0.0.6 (docs/traps.md T20)', () => {
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

describe('IPv4-mapped entries', () => {
  // Cases from jshttp/proxy-addr test/test.js, "when IPv4-mapped IPv6 addresses" (commit
  // 07d164104035ff1f85fe4ae28b8a9693148ab9e8); host bits cleared (::ffff:a00:2/122 → ::ffff:a00:0/122)
  // because entries are parsed strictly here (docs/traps.md T19).
  it('an IPv6 entry matches the plain IPv4 client (proxy-addr: "should match IPv6 trust to IPv4 request")', () => {
    const g = compileIpGuard([], ['::ffff:a00:1', '::ffff:a00:2']);
    assert.equal(g.clientAddress('10.0.0.1', '192.168.0.1, 10.0.0.2'), '192.168.0.1');
  });
  it('an IPv4-mapped CIDR matches IPv4 clients inside it only (proxy-addr: "should match CIDR notation for IPv4-mapped address")', () => {
    const g = compileIpGuard([], ['::ffff:a00:0/122', 'fe80::/125']);
    assert.equal(g.clientAddress('10.0.0.1', '192.168.0.1, 10.0.0.200'), '10.0.0.200');
  });
  it('guard.allow ::ffff:127.0.0.1 admits 127.0.0.1 and ::ffff:10.0.0.0/104 admits 10.x', () => {
    const g = compileIpGuard(['::ffff:127.0.0.1', '::ffff:10.0.0.0/104']);
    const judge = (peer: string) => g.allows(g.clientAddress(peer, undefined));
    assert.equal(judge('127.0.0.1'), true);
    assert.equal(judge('::ffff:127.0.0.1'), true);
    assert.equal(judge('10.20.30.40'), true);
    assert.equal(judge('11.0.0.1'), false);
    assert.equal(judge('127.0.0.6'), false);
  });
  it('::/0 (with allowAnyone) also admits IPv4 clients, as "everyone" says', () => {
    const g = compileIpGuard(['::/0']);
    assert.equal(g.allows(g.clientAddress('192.0.2.1', undefined)), true);
  });
});

describe('coversEveryone', () => {
  const wide = (entry: string) => coversEveryone(parseStrictCidr(entry) as Exclude<ReturnType<typeof parseStrictCidr>, string>);
  for (const entry of ['0.0.0.0/0', '::/0', '::ffff:0:0/96', '0.0.0.0/7', '8.0.0.0/7', '::ffff:0.0.0.0/100', '::/80', '2000::/3', 'fd00::/8']) {
    it(`${entry} covers everyone`, () => assert.equal(wide(entry), true));
  }
  for (const entry of ['10.0.0.0/8', '127.0.0.1/32', '::1/128', '::ffff:10.0.0.0/104', '2001::/16', 'fd00::/16', '64:ff9b::/96']) {
    it(`${entry} does not`, () => assert.equal(wide(entry), false));
  }
});
