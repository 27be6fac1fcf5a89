import assert from 'node:assert/strict';
import { forwardedClient, nodeAddress, parseForwarded } from '../../core/forwarded.js';

describe('forwarded client (core/forwarded.ts)', () => {
  it('reads RFC 7239 elements: case-insensitive names, quoted strings, IPv6 in brackets with a port', () => {
    assert.deepEqual(parseForwarded('For="[2001:db8:cafe::17]:4711";Proto=https;host="a.example", for=192.0.2.60'), [
      { for: '[2001:db8:cafe::17]:4711', proto: 'https', host: 'a.example' },
      { for: '192.0.2.60' },
    ]);
    assert.equal(nodeAddress('[2001:DB8::1]:4711'), '2001:db8::1');
    assert.equal(nodeAddress('192.0.2.1:8080'), '192.0.2.1');
    assert.equal(nodeAddress('2001:db8::1'), '2001:db8::1');
    assert.equal(nodeAddress('_hidden.1'), '_hidden.1');
    assert.equal(nodeAddress('unknown'), 'unknown');
    for (const bad of ['<script>', '999.1.1.1', '[192.0.2.1]', 'host.example', '']) {
      assert.equal(nodeAddress(bad), undefined, bad);
    }
  });

  it('takes the entry the outermost trusted proxy wrote, and a stray client quote cannot hide it', () => {
    const trust = { hops: 1, header: 'forwarded' as const };
    assert.deepEqual(
      forwardedClient({ forwarded: 'for="1.1.1.1, for=203.0.113.7;host=a.example;proto=https' }, trust),
      {
        address: '203.0.113.7',
        host: 'a.example',
        proto: 'https',
      },
    );
    // Fewer entries than hops: the leftmost, as Koa's maxIpsCount and Express's hop count do.
    assert.deepEqual(forwardedClient({ xForwardedFor: '203.0.113.7' }, { hops: 3, header: 'x-forwarded-for' }), {
      address: '203.0.113.7',
    });
    // Host and scheme from the same position; unusable ones are dropped, not guessed.
    assert.deepEqual(
      forwardedClient(
        {
          xForwardedFor: '10.0.0.1, 203.0.113.7',
          xForwardedHost: 'evil.example, a.example',
          xForwardedProto: 'javascript',
        },
        { hops: 1, header: 'x-forwarded-for' },
      ),
      { address: '203.0.113.7', host: 'a.example' },
    );
    assert.deepEqual(forwardedClient({ forwarded: 'for=203.0.113.7' }, { hops: 1, header: 'x-forwarded-for' }), {});
  });
});
