import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

/** One raw HTTP/1.1 exchange: writes `parts` in order (a pause between), returns what came back until close. */
function exchange(url: string, parts: string[]): Promise<{ status: number; body: unknown; closed: boolean }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let response = '';
    let settled = false;
    const settle = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(giveUp);
      socket.destroy();
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? NaN);
      const text = response.slice(response.indexOf('\r\n\r\n') + 4);
      try {
        resolve({ status, body: JSON.parse(text), closed });
      } catch (error) {
        reject(new Error(`not a JSON answer: ${response}`, { cause: error }));
      }
    };
    const writeParts = async () => {
      for (const part of parts) {
        if (!socket.writable) break;
        socket.write(part);
        await new Promise((done) => setTimeout(done, 20));
      }
    };
    const socket = connect(Number(port), hostname, () => void writeParts());
    // Keep-alive answers stay open: settle once the whole JSON body is in.
    const giveUp = setTimeout(() => settle(false), 2000);
    socket.on('data', (chunk: Buffer) => {
      response += chunk.toString('utf8');
      const length = /\r\ncontent-length: (\d+)/i.exec(response)?.[1];
      const end = response.indexOf('\r\n\r\n');
      if (length !== undefined && end >= 0 && Buffer.byteLength(response) >= end + 4 + Number(length)) {
        // Give a closing server a moment to close, so `closed` tells.
        setTimeout(() => settle(socket.readableEnded || socket.destroyed), 50);
      }
    });
    socket.on('end', () => settle(true));
    socket.on('error', () => settle(true));
  });
}

const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
const chunkedHead =
  'POST /v1/compute HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n';

describe('JSON request bodies (api/json-body.ts)', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { bodyLimitBytes: 4096 } });
  });
  after(() => gw.close());

  it('reads a body that arrives in several chunks as one text', async () => {
    // Split inside a string and inside a key: the parts must be joined before parsing. Unsigned, so gate 1 answers.
    const res = await exchange(gw.url, [
      chunkedHead,
      chunk('{"steps": [{"id": "a", "ty'),
      chunk('pe": "inference"}], "h3_ce'),
      chunk('ll": "861e8050fffffff"}'),
      '0\r\n\r\n',
    ]);
    assert.equal(res.status, 401);
    assert.deepEqual(res.body, { error: 'signature_required', detail: 'X-Idn-Signature header is required' });
    assert.equal(res.closed, false);
  });

  it('answers a body growing past the limit without a content-length with 413 and closes the connection', async () => {
    const res = await exchange(gw.url, [chunkedHead, chunk(`{"pad": "${'x'.repeat(3000)}`), chunk('x'.repeat(3000))]);
    assert.equal(res.status, 413);
    assert.deepEqual(res.body, { error: 'payload_too_large', detail: 'the request body exceeds 4096 bytes' });
    assert.equal(res.closed, true);
  });

  it('answers a body of nothing but whitespace (Unicode spaces and line separators too) as empty', async () => {
    for (const blank of ['', ' \t\r\n', '\u00a0\u2028\u2029\ufeff\u3000']) {
      const res = await gw.request('POST', '/v1/compute', {
        raw: blank,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 400, JSON.stringify(blank));
      assert.deepEqual(res.body, {
        error: 'invalid_json',
        detail: 'the request body is empty; a JSON object is required',
      });
    }
  });

  it('names the offset of a duplicate key, after whitespace that is not blank', async () => {
    const res = await gw.request('POST', '/v1/compute', {
      raw: ' {"a": 1, "a": 2}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body, {
      error: 'invalid_json',
      detail: 'the body is not valid JSON: duplicate key "a" at position 10',
    });
  });
});
