/**
 * GET /v1/compute/recent pages (docs/protocol.md §2.3): `next_cursor` walks every job once, newest first, and a
 * deep page reached by its cursor holds the same jobs as at that depth of the whole list (keyset, not OFFSET).
 */
import assert from 'node:assert/strict';
import { signRequestBody } from '../../core/gates/signature.js';
import { generateKeyPair } from '../../core/identity.js';
import { startGateway } from '../helpers/gateway.js';
import { runningJob } from '../store/job-store.contract.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;
interface Page {
  view: string;
  count: number;
  jobs: { job_id: string }[];
  next_cursor: string | null;
}

const OPERATOR = 'operator-token-for-pages';
const T0 = Date.UTC(2026, 2, 1, 12);
const iso = (ms: number) => new Date(ms).toISOString();
const operator = { authorization: `Bearer ${OPERATOR}` };

describe('GET /v1/compute/recent pages', () => {
  let gw: Gateway;
  const alice = generateKeyPair();
  const bob = generateKeyPair();
  /** Every job id, newest first. */
  const newestFirst: string[] = [];

  before(async () => {
    gw = await startGateway({ config: { operatorToken: OPERATOR }, clock: () => T0 + 3_600_000 });
    // 1,050 jobs, three to a created_at (the job id orders a tie), alternately Alice's and Bob's.
    for (let i = 0; i < 1050; i++) {
      const at = iso(T0 + Math.floor(i / 3) * 1000);
      const job_id = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
      const requester_pk = (i % 2 === 0 ? alice : bob).publicKey;
      await gw.jobs.claim(runningJob({ job_id, requester_pk, created_at: at, updated_at: at }));
      newestFirst.unshift(job_id);
    }
  });
  after(() => gw.close());

  async function walk(path: string, headers: Record<string, string>): Promise<{ ids: string[]; pages: Page[] }> {
    const ids: string[] = [];
    const pages: Page[] = [];
    for (let cursor: string | null = null; ;) {
      const url: string = cursor === null ? path : `${path}&cursor=${encodeURIComponent(cursor)}`;
      const res = await gw.get(url, headers);
      assert.equal(res.status, 200, res.text);
      const page = res.body as Page;
      pages.push(page);
      ids.push(...page.jobs.map((j) => j.job_id));
      if (page.next_cursor === null) return { ids, pages };
      cursor = page.next_cursor;
    }
  }

  it('walks every job once, newest first, and a deep page holds the jobs at its depth', async () => {
    const { ids, pages } = await walk('/v1/compute/recent?limit=10', operator);
    assert.deepEqual(ids, newestFirst);
    // 105 full pages; a full page always carries a cursor, so the walk ends on an empty one.
    assert.equal(pages.length, 106);
    assert.deepEqual(
      pages[0]!.jobs.map((j) => j.job_id),
      newestFirst.slice(0, 10),
    );
    // Page 100, fetched again by the cursor of page 99: the same ten jobs as at that depth of the list.
    const again = await gw.get(
      `/v1/compute/recent?limit=10&cursor=${encodeURIComponent(pages[98]!.next_cursor!)}`,
      operator,
    );
    assert.deepEqual(
      (again.body as Page).jobs.map((j) => j.job_id),
      newestFirst.slice(990, 1000),
    );
    assert.equal(pages[104]!.count, 10);
    assert.equal(pages[105]!.count, 0);
    assert.equal(pages[105]!.next_cursor, null);
  });

  it("pages a signed requester's own jobs the same way", async () => {
    const { body, signature } = signRequestBody(alice.secretKey, { created_at: iso(T0 + 3_600_000), nonce: 'p' });
    const query = new URLSearchParams({
      requester_pk: body.requester_pk,
      created_at: body.created_at,
      nonce: body.nonce,
    });
    const { ids, pages } = await walk(`/v1/compute/recent?limit=100&${query}`, { 'x-idn-signature': signature });
    assert.equal(pages[0]!.view, 'requester');
    const hers = newestFirst.filter((id) => Number(id.slice(-12)) % 2 === 0);
    assert.deepEqual(ids, hers);
    assert.equal(pages.length, 6);
  });

  it('refuses a cursor it did not issue (400 invalid_request)', async () => {
    for (const cursor of ['not*base64', Buffer.from('{"a":1}').toString('base64url'), 'x'.repeat(500)]) {
      const res = await gw.get(`/v1/compute/recent?cursor=${cursor}`, operator);
      assert.equal(res.status, 400, cursor);
      assert.equal((res.body as { error: string }).error, 'invalid_request');
    }
  });
});
