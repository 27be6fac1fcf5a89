import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { sendRaw } from '../fuzz/http-client.js';

const head = (lines: string[]) => `${lines.join('\r\n')}\r\n\r\n`;
const UPGRADE = ['host: 127.0.0.1', 'upgrade: websocket', 'connection: upgrade'];

describe('requests that ask for a protocol upgrade (api/client-errors.ts)', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw?.close());

  it('refuses one with a body at once, with a JSON 400, even when its chunked framing is malformed', async () => {
    for (const framing of [
      'transfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
      'transfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
      'content-length: 2\r\n\r\n{}',
    ]) {
      const bytes = `POST /v1/compute HTTP/1.1\r\n${UPGRADE.join('\r\n')}\r\n${framing}`;
      const res = await sendRaw(gw.url, Buffer.from(bytes), 5_000);
      assert.equal(res.status, 400, framing);
      assert.equal(JSON.parse(res.text).error, 'invalid_request');
      assert.match(JSON.parse(res.text).detail, /upgrade/);
    }
  });

  it('serves one without a body as plain HTTP/1.1 (an h2c or WebSocket upgrade is ignored)', async () => {
    for (const upgrade of ['websocket', 'h2c']) {
      const bytes = head(['GET /health HTTP/1.1', 'host: 127.0.0.1', `upgrade: ${upgrade}`, 'connection: upgrade']);
      const res = await sendRaw(gw.url, Buffer.from(bytes), 5_000);
      assert.equal(res.status, 200, upgrade);
      assert.equal(JSON.parse(res.text).status, 'ok');
    }
  });
});
