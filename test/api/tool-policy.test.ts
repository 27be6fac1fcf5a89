import assert from 'node:assert/strict';
import { generateKeyPair } from '../../core/identity.js';
import { jobIdFromSignature } from '../../core/job-hash.js';
import { startGateway } from '../helpers/gateway.js';
import { signJob } from '../helpers/jobs.js';
import { examplePolicy } from '../helpers/tool-policy.js';

const ROME = '861e8050fffffff';
const NEW_YORK = '862a1072fffffff';
const BEIJING = '8631aa42fffffff';

describe('gate 5 at request entry: the tool policy refuses a compute step before anything is dispatched', () => {
  let gw: Awaited<ReturnType<typeof startGateway>>;
  const alice = generateKeyPair();
  afterEach(() => gw?.close());

  const job = (cell: string, tools: string[], stepCell?: string) =>
    signJob(alice, {
      h3_cell: cell,
      steps: [
        {
          id: 'ask',
          type: 'inference',
          tools,
          messages: [{ role: 'user', content: 'run it' }],
          ...(stepCell ? { context: { h3_cell: stepCell } } : {}),
        },
      ],
      budget_credits: 0.1,
    });

  it('refuses code-execution for an EU cell (agent tier unknown at the gateway), naming tool, place and rule', async () => {
    gw = await startGateway({ config: { toolPolicy: examplePolicy() } });
    const signed = job(ROME, ['code-execution']);
    const res = await gw.post('/v1/compute', signed.body, signed.headers);
    assert.equal(res.status, 403, res.text);
    const body = res.body as { error: string; detail: string };
    assert.equal(body.error, 'tool_not_permitted');
    assert.match(body.detail, /tool code-execution/);
    assert.match(body.detail, new RegExp(`cell ${ROME} \\(IT, jurisdiction EU\\)`));
    assert.match(body.detail, /rule eu-code-execution-trusted/);
    assert.match(body.detail, /agent trust tier trusted/);
    // Nothing was dispatched: no job exists under the request's id.
    const lookup = await gw.get(`/v1/compute/${jobIdFromSignature(signed.headers['x-idn-signature'])}`);
    assert.equal(lookup.status, 404);
  });

  it('refuses by any place the request names: a step cell in China denies web-search', async () => {
    gw = await startGateway({ config: { toolPolicy: examplePolicy() } });
    const china = job(NEW_YORK, ['web-search'], BEIJING);
    const res = await gw.post('/v1/compute', china.body, china.headers);
    assert.equal(res.status, 403, res.text);
    assert.match(
      (res.body as { detail: string }).detail,
      /cell 8631aa42fffffff \(CN, jurisdiction CN\).*cn-no-web-search: denied there/,
    );
  });

  it('judges a cell by every country it touches: a res-2 cell centred in North Korea covers Dandong, China', async () => {
    gw = await startGateway({ config: { toolPolicy: examplePolicy() } });
    const border = job('82302ffffffffff', ['web-search']);
    const res = await gw.post('/v1/compute', border.body, border.headers);
    assert.equal(res.status, 403, res.text);
    assert.match(
      (res.body as { detail: string }).detail,
      /cell 82302ffffffffff \(CN, jurisdiction CN\).*cn-no-web-search: denied there/,
    );
  });

  it('lets through what no rule forbids, and defers a worker-tier rule to the worker', async () => {
    gw = await startGateway({ config: { toolPolicy: examplePolicy() } });
    for (const signed of [job(NEW_YORK, ['code-execution']), job(ROME, ['web-search']), job(ROME, ['file-ops'])]) {
      const res = await gw.post('/v1/compute', signed.body, signed.headers);
      assert.notEqual((res.body as { error?: string }).error, 'tool_not_permitted', res.text);
    }
  });

  it('changes nothing without a policy (the default)', async () => {
    gw = await startGateway();
    const signed = job(ROME, ['code-execution']);
    const res = await gw.post('/v1/compute', signed.body, signed.headers);
    assert.notEqual((res.body as { error?: string }).error, 'tool_not_permitted', res.text);
  });
});
