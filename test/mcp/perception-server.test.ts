import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { cellToChildren, latLngToCell } from 'h3-js';
import { canonicalJson } from '../../core/canonical-json.js';
import { approvalSigningString, type ComplianceReport } from '../../core/compliance-report.js';
import type { ChainVerification } from '../../core/breadcrumb.js';
import type { Violation } from '../../core/breadcrumb-types.js';
import {
  issueCertificate,
  type DelegationCertificate,
  type DelegationConstraints,
} from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair, signMessage, type KeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';
import { REPORT_UI_MIME, REPORT_UI_URI } from '../../mcp/perception/report-ui.js';
import { createPerceptionServer, type PerceptionServer } from '../../mcp/perception/server.js';
import { createClassifyTool } from '../../mcp/perception/tools/classify.js';
import { createEmbedTool } from '../../mcp/perception/tools/embed.js';
import { createFetchTileTool } from '../../mcp/perception/tools/fetch-tile.js';
import { createWeatherTool } from '../../mcp/perception/tools/weather.js';
import type { AuditStore } from '../../store/audit-store.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import type { ToolPolicy } from '../../core/gates/tool-policy.js';
import { startClassifyServer, type ClassifyServer } from '../helpers/classify-server.js';
import { startOpenMeteoServer, type OpenMeteoServer } from '../helpers/open-meteo-server.js';
import { sentinelItem, startStacServer, type StacServer } from '../helpers/stac-server.js';
import { agentToken, tokenVerifierOf } from '../helpers/agent-token.js';
import { examplePolicy } from '../helpers/tool-policy.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;
const CELL = DEFAULT_PERCEPTION_CELL;
/** A resolution 7 cell inside the certificate's resolution 5 cell, and one in Paris. */
const INSIDE = cellToChildren(CELL, 7)[3] as string;
const PARIS = latLngToCell(48.8566, 2.3522, 7);
const TOOL_NAMES = [
  'perception_weather',
  'perception_fetch_tile',
  'perception_classify',
  'perception_embed',
  'idn_get_compliance_report',
  'idn_get_trust_score',
  'idn_verify_chain',
  'idn_roll_epoch',
];

interface Json {
  status: number;
  body: Record<string, unknown>;
}

interface Harness {
  url: string;
  server: PerceptionServer;
  agent: KeyPair;
  human: KeyPair;
  chain: DelegationCertificate[];
  get(path: string, headers?: Record<string, string>): Promise<Json>;
  post(path: string, body?: unknown, headers?: Record<string, string>): Promise<Json>;
  /**
   * A connected MCP client over Streamable HTTP (default) or SSE; closed with the harness. Anonymous, or with
   * `token` the server agent's own bearer token: only calls under a token count as operations and may roll.
   */
  client(transport?: 'streamable' | 'sse', options?: { token?: boolean }): Promise<Client>;
  /** The Authorization header of a fresh token of the server's own agent. */
  auth(): Promise<Record<string, string>>;
  close(): Promise<void>;
}

/** The text of a tool result, and its JSON when it is not an error. */
function text(result: unknown): string {
  const content = (result as CallToolResult).content[0];
  assert.equal(content?.type, 'text');
  return (content as { text: string }).text;
}
function ok<T = Record<string, unknown>>(result: unknown): T {
  assert.notEqual((result as CallToolResult).isError, true, text(result));
  return JSON.parse(text(result)) as T;
}
function toolError(result: unknown): string {
  assert.equal((result as CallToolResult).isError, true, `expected a tool error, got ${text(result)}`);
  return text(result);
}

describe('perception server (MCP)', function () {
  let meteo: OpenMeteoServer;
  let classify: ClassifyServer;
  let stac: StacServer;
  let db: SqliteDatabase;
  let store: AuditStore;
  let now: number;
  const harnesses: Harness[] = [];
  const governance = generateKeyPair();

  before(async () => {
    [meteo, classify, stac] = await Promise.all([startOpenMeteoServer(), startClassifyServer(), startStacServer()]);
  });
  after(() => Promise.all([meteo.close(), classify.close(), stac.close()]));

  beforeEach(() => {
    now = NOW;
    db = openSqlite(':memory:');
    store = createSqliteAuditStore(db);
    meteo.requests.length = 0;
    classify.requests.length = 0;
    stac.searches.length = 0;
    stac.items = [
      sentinelItem('S2A_0220', '2026-02-20T10:00:00Z', {
        properties: { 'eo:cloud_cover': 4 },
        assets: {
          blue: stac.fileUrl('B02.tif'),
          green: stac.fileUrl('B03.tif'),
          red: stac.fileUrl('B04.tif'),
          nir: stac.fileUrl('B08.tif'),
        },
      }),
    ];
  });
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
    await store.close();
    db.close();
  });

  async function start(
    options: {
      constraints?: DelegationConstraints | null;
      facets?: string[];
      notAfter?: number;
      classifyUrl?: string;
      allowedOrigins?: string[];
      agent?: KeyPair;
      auditStore?: AuditStore;
      knownChains?: DelegationCertificate[][];
      toolPolicy?: ToolPolicy;
    } = {},
  ): Promise<Harness> {
    const agent = options.agent ?? generateKeyPair();
    const human = generateKeyPair();
    const cert = issueCertificate(human.secretKey, {
      agent_pk: agent.publicKey,
      h3_cells: [CELL],
      facets: options.facets ?? ['perception', 'compliance'],
      not_before: new Date(NOW - DAY).toISOString(),
      not_after: new Date(options.notAfter ?? NOW + 30 * DAY).toISOString(),
      max_depth: 0,
      constraints:
        options.constraints === undefined ? { allowed_tools: [...DEFAULT_ALLOWED_TOOLS] } : options.constraints,
    });
    const clock = () => now;
    const server = createPerceptionServer({
      store: options.auditStore ?? store,
      agent,
      chain: [cert],
      principalLocal: false,
      clock,
      allowedOrigins: options.allowedOrigins ?? [],
      knownChains: options.knownChains ?? [],
      testRoutes: true,
      tokenVerifier: tokenVerifierOf(governance),
      ...(options.toolPolicy ? { toolPolicy: options.toolPolicy } : {}),
      tools: [
        createWeatherTool({ weatherUrl: meteo.url, timeoutMs: 2000, userAgent: 'geofabric-test', clock }),
        createFetchTileTool({
          stac: { stacUrl: stac.url, collection: 'sentinel-2-l2a', timeoutMs: 2000, userAgent: 'geofabric-test' },
        }),
        createClassifyTool({ classifyUrl: options.classifyUrl, timeoutMs: 2000 }),
        createEmbedTool(),
      ],
    });
    const { url } = await server.listen(0, '127.0.0.1');
    const clients: Client[] = [];
    const auth = async () => ({
      authorization: `Bearer ${await agentToken({ issuer: governance, chain: [cert], nowMs: now })}`,
    });
    const request = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const harness: Harness = {
      url,
      server,
      agent,
      human,
      chain: [cert],
      get: (path, headers) => request('GET', path, undefined, headers),
      post: (path, body, headers) => request('POST', path, body, headers),
      auth,
      async client(kind = 'streamable', options = {}) {
        const client = new Client({ name: 'perception-test', version: '1.0.0' });
        const requestInit = { headers: options.token === true ? await auth() : {} };
        await client.connect(
          kind === 'sse'
            ? new SSEClientTransport(new URL(`${url}/sse`), { requestInit })
            : new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit }),
        );
        clients.push(client);
        return client;
      },
      async close() {
        await Promise.all(clients.map((c) => c.close()));
        await server.close();
      },
    };
    harnesses.push(harness);
    return harness;
  }

  const report = async (h: Harness, path = '/compliance') => {
    const res = await h.get(path);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body as unknown as ComplianceReport;
  };

  describe('tool listing', () => {
    for (const kind of ['streamable', 'sse'] as const) {
      it(`lists the eight tools with their input schemas over ${kind === 'sse' ? 'SSE' : 'Streamable HTTP'}`, async () => {
        const h = await start();
        const client = await h.client(kind);
        const { tools } = await client.listTools();
        assert.deepEqual(
          tools.map((t) => t.name),
          TOOL_NAMES,
        );
        const byName = new Map(tools.map((t) => [t.name, t]));
        const weather = byName.get('perception_weather')!;
        assert.deepEqual(weather.inputSchema.required, ['h3_cell']);
        assert.deepEqual(Object.keys(weather.inputSchema.properties ?? {}).sort(), [
          'h3_cell',
          'timestamp',
          'write_to_spatial_memory',
        ]);
        assert.deepEqual(Object.keys(byName.get('perception_fetch_tile')!.inputSchema.properties ?? {}).sort(), [
          'bands',
          'days_back',
          'expression',
          'h3_cell',
          'max_cloud_cover',
        ]);
        assert.deepEqual(Object.keys(byName.get('perception_classify')!.inputSchema.properties ?? {}).sort(), [
          'h3_cell',
          'model',
          'task',
        ]);
        const reportTool = byName.get('idn_get_compliance_report')!;
        assert.deepEqual(Object.keys(reportTool.inputSchema.properties ?? {}), ['agent_pk']);
        assert.ok(!(reportTool.inputSchema.required ?? []).includes('agent_pk'));
        assert.deepEqual(reportTool._meta, { ui: { resourceUri: REPORT_UI_URI } });

        const ui = await client.readResource({ uri: REPORT_UI_URI });
        assert.equal(ui.contents[0]?.mimeType, REPORT_UI_MIME);
        assert.match(String((ui.contents[0] as { text?: string }).text), /<html/i);
        // A call over this transport is audited like any other.
        ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
        assert.equal((await h.get('/health')).body.chain_tip, 1);
      });
    }

    it('names the field of a bad argument in the tool error, and nothing runs', async () => {
      const h = await start();
      const client = await h.client();
      const message = toolError(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: 'rome' } }));
      assert.match(message, /h3_cell/);
      assert.match(message, /valid H3 cell/);
      assert.equal(meteo.requests.length, 0);
      assert.equal((await h.get('/health')).body.chain_tip, 0);
    });
  });

  describe('tools', () => {
    it('perception_weather answers from the weather API and leaves a breadcrumb', async () => {
      const h = await start();
      const client = await h.client();
      const weather = ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE } }));
      assert.equal(weather.h3_cell, INSIDE);
      assert.equal(weather.temperature_c, 14.3);
      assert.equal(weather.wind_speed_ms, 3.2);
      assert.equal(weather.status, 'ok');
      assert.equal(weather.conditions, 'cloudy');
      assert.equal(meteo.requests.length, 1);
      const [block] = await store.blocks(h.agent.publicKey);
      const signed = JSON.parse(block!.data_to_sign) as Record<string, unknown>;
      assert.equal(signed.tool_name, 'perception_weather');
      assert.equal(signed.loc_cell, INSIDE);
      assert.equal(signed.loc_res, 7);
      assert.equal(signed.facet, 'perception');
      assert.equal(signed.prev_hash, 'genesis');
      assert.equal((signed.context as { outcome: string }).outcome, 'ok');
      assert.equal((signed.context as { result_hash: string }).result_hash.length, 64);
    });

    it('perception_fetch_tile answers the scene and its band URLs from the STAC catalog', async () => {
      const h = await start();
      const client = await h.client();
      const tile = ok(
        await client.callTool({ name: 'perception_fetch_tile', arguments: { h3_cell: CELL, bands: ['B04', 'B08'] } }),
      );
      assert.equal(stac.searches.length, 1);
      assert.match(JSON.stringify(tile), /S2A_0220/);
      assert.match(JSON.stringify(tile), /B04\.tif/);
      assert.match(JSON.stringify(tile), /B08\.tif/);
    });

    it('perception_classify says it is not configured, and classifies when it is', async () => {
      const bare = await start();
      const message = toolError(
        await (await bare.client()).callTool({ name: 'perception_classify', arguments: { h3_cell: CELL } }),
      );
      assert.match(message, /not_configured/);
      assert.match(message, /CLASSIFY_URL/);

      const configured = await start({ classifyUrl: classify.url });
      const result = ok(
        await (await configured.client()).callTool({ name: 'perception_classify', arguments: { h3_cell: CELL } }),
      );
      assert.equal(classify.requests.length, 1);
      assert.equal(result.task, 'flood_detection');
      assert.equal(typeof result.flood_fraction, 'number');
      // The failed call still left a breadcrumb, with outcome error.
      const [failed] = await store.blocks(bare.agent.publicKey);
      assert.equal((JSON.parse(failed!.data_to_sign) as { context: { outcome: string } }).context.outcome, 'error');
    });

    it('perception_embed answers that it is not available (planned)', async () => {
      const h = await start();
      const message = toolError(
        await (await h.client()).callTool({ name: 'perception_embed', arguments: { h3_cell: CELL } }),
      );
      assert.match(message, /not available \(planned\)/);
    });

    it('the idn_* tools report, score, verify and roll the agent chain', async () => {
      const h = await start();
      const client = await h.client('sse', { token: true });
      ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
      ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE } }));

      const rep = ok<ComplianceReport>(await client.callTool({ name: 'idn_get_compliance_report', arguments: {} }));
      assert.equal(rep.version, 1);
      assert.equal(rep.agent_pk, h.agent.publicKey);
      assert.equal(rep.principal_pk, h.human.publicKey);
      assert.equal(rep.total_operations, 2);
      assert.deepEqual(rep.operations_by_tool, { perception_weather: 2 });
      assert.deepEqual(rep.jurisdiction_cells, [CELL, INSIDE].sort());
      assert.equal(rep.chain_verification.is_valid, true);
      assert.equal(rep.delegation_certificate.principal_local, false);

      const trust = ok(await client.callTool({ name: 'idn_get_trust_score', arguments: {} }));
      assert.equal(trust.agent_pk, h.agent.publicKey);
      assert.equal(typeof trust.trust_score, 'number');
      assert.equal(trust.current_tier, 'provisioned');
      assert.deepEqual(Object.keys(trust.parts as object).sort(), [
        'chain_validity',
        'longevity',
        'operations',
        'territory',
      ]);
      assert.equal((trust.thresholds as Record<string, number>).sovereign, 99);

      const chain = ok<ChainVerification>(await client.callTool({ name: 'idn_verify_chain', arguments: {} }));
      assert.equal(chain.is_valid, true);
      assert.equal(chain.block_count, 4); // two weather calls, the report, the score

      const roll = ok(await client.callTool({ name: 'idn_roll_epoch', arguments: {} }));
      assert.deepEqual(
        {
          success: roll.success,
          epoch_index: roll.epoch_index,
          start_block: roll.start_block,
          end_block: roll.end_block,
        },
        { success: true, epoch_index: 0, start_block: 0, end_block: 4 },
      );
      assert.match(String(roll.merkle_root), /^[0-9a-f]{64}$/);
      // Only the roll's own breadcrumb (block 5) since: nothing to roll, as POST /epoch/roll says.
      const again = toolError(await client.callTool({ name: 'idn_roll_epoch', arguments: {} }));
      assert.match(again, /EPOCH: no blocks to roll since block_index 5/);
      // Once something else happened, the rolls' breadcrumbs are sealed with it.
      ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE } }));
      const second = ok(await client.callTool({ name: 'idn_roll_epoch', arguments: {} }));
      assert.equal(second.start_block, 5);
      assert.equal(second.end_block, 7);
    });

    it('an empty idn_roll_epoch is a tool error with the protocol message', async () => {
      const h = await start();
      // The roll runs before its own breadcrumb (block 0) is written: there is nothing to roll.
      const client = await h.client('streamable', { token: true });
      const empty = toolError(await client.callTool({ name: 'idn_roll_epoch', arguments: {} }));
      assert.match(empty, /EPOCH: no blocks to roll since block_index 0/);
    });
  });

  describe('pre-flight', () => {
    /** Calls a tool that is blocked; asserts the violation, that nothing ran, and that the report shows it. */
    async function assertBlocked(
      h: Harness,
      call: { name: string; arguments: Record<string, unknown> },
      type: Violation['type'],
      severity: Violation['severity'],
      detail: RegExp,
    ) {
      const before = { meteo: meteo.requests.length, classify: classify.requests.length, stac: stac.searches.length };
      const message = toolError(await (await h.client()).callTool(call));
      assert.match(message, new RegExp(`blocked by delegation pre-flight \\(${type}\\)`));
      assert.match(message, detail);
      assert.deepEqual(
        { meteo: meteo.requests.length, classify: classify.requests.length, stac: stac.searches.length },
        before,
        'the tool did not run',
      );
      const rep = await report(h);
      const violation = rep.violations.at(-1)!;
      assert.equal(violation.type, type);
      assert.equal(violation.severity, severity);
      assert.equal(violation.tool_name, call.name);
      assert.match(violation.detail, detail);
      // The blocked call has its breadcrumb, which names the violation, and it is not an operation.
      const [block] = await store.blocks(h.agent.publicKey, {
        fromIndex: violation.block_index!,
        toIndex: violation.block_index!,
      });
      const signed = JSON.parse(block!.data_to_sign) as {
        context: { outcome: string; result_hash: null };
        meta: { violation: string };
      };
      assert.equal(signed.context.outcome, 'blocked');
      assert.equal(signed.context.result_hash, null);
      assert.equal(signed.meta.violation, type);
      assert.equal(rep.chain_verification.is_valid, true);
      return rep;
    }

    it('blocks a cell outside the certificate (jurisdiction_breach)', async () => {
      const h = await start();
      const rep = await assertBlocked(
        h,
        { name: 'perception_weather', arguments: { h3_cell: PARIS } },
        'jurisdiction_breach',
        'critical',
        /outside the delegated cells/,
      );
      assert.equal(rep.total_operations, 0);
      assert.deepEqual(rep.jurisdiction_cells, []);
    });

    it("blocks a tool the tool policy forbids at the cell for the agent's tier (gate 5), logging the violation", async () => {
      const h = await start({ classifyUrl: classify.url, toolPolicy: examplePolicy() });
      // A new agent is provisioned: perception_classify in an EU cell needs observed (eu-classify-observed).
      const rep = await assertBlocked(
        h,
        { name: 'perception_classify', arguments: { h3_cell: INSIDE } },
        'jurisdiction_breach',
        'critical',
        /tool perception_classify is not permitted in cell [0-9a-f]+ \(IT, jurisdiction EU\) by tool policy rule eu-classify-observed: it needs agent trust tier observed; the caller is provisioned/,
      );
      assert.equal(rep.total_operations, 0);
      // What no rule names still runs.
      ok(await (await h.client()).callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE } }));
    });

    it('blocks a tool the certificate does not allow, or denies (facet_violation)', async () => {
      const notAllowed = await start({
        constraints: { allowed_tools: ['perception_weather', 'idn_get_compliance_report'] },
      });
      await assertBlocked(
        notAllowed,
        { name: 'perception_classify', arguments: { h3_cell: CELL } },
        'facet_violation',
        'critical',
        /not allowed/,
      );
      const denied = await start({ constraints: { denied_tools: ['perception_fetch_tile'] } });
      await assertBlocked(
        denied,
        { name: 'perception_fetch_tile', arguments: { h3_cell: CELL } },
        'facet_violation',
        'critical',
        /denied/,
      );
    });

    it('blocks a facet the certificate does not grant (facet_violation)', async () => {
      const h = await start({ facets: ['compliance'] });
      await assertBlocked(
        h,
        { name: 'perception_weather', arguments: { h3_cell: CELL } },
        'facet_violation',
        'critical',
        /facet "perception" is not delegated/,
      );
    });

    it('blocks calls past max_ops_per_hour (rate_limit), counting only calls that ran, in a sliding hour', async () => {
      const h = await start({ constraints: { max_ops_per_hour: 3 } });
      const client = await h.client();
      for (let i = 0; i < 3; i++)
        ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
      await assertBlocked(
        h,
        { name: 'perception_weather', arguments: { h3_cell: CELL } },
        'rate_limit',
        'warning',
        /max_ops_per_hour 3 reached/,
      );
      // Only the three calls that ran count; an hour later the window has room again.
      now += 3_600_001;
      ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
      assert.equal(meteo.requests.length, 4);
    });

    it('blocks every call once the certificate expired (cert_expired)', async () => {
      const h = await start({ notAfter: NOW + 60_000 });
      now = NOW + 120_000;
      await assertBlocked(
        h,
        { name: 'perception_weather', arguments: { h3_cell: CELL } },
        'cert_expired',
        'critical',
        /expired at/,
      );
    });

    it('withholds the result and logs a chain_break when the breadcrumb cannot be persisted', async () => {
      let failAppends = false;
      const flaky: AuditStore = {
        ...store,
        appendBlock: (block) => (failAppends ? Promise.reject(new Error('disk full')) : store.appendBlock(block)),
      };
      const h = await start({ auditStore: flaky });
      const client = await h.client();
      failAppends = true;
      const message = toolError(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
      assert.match(message, /chain_break/);
      assert.match(message, /withheld/);
      assert.doesNotMatch(message, /temperature/);
      assert.equal(meteo.requests.length, 1, 'the tool ran; its result did not leave');
      failAppends = false;
      const rep = await report(h);
      assert.deepEqual(
        rep.violations.map((v) => [v.type, v.severity, v.block_index]),
        [['chain_break', 'critical', null]],
      );
      assert.equal(rep.chain_verification.is_valid, true, 'the chain did not fork or gap');
    });
  });

  describe('the chain', () => {
    it('stays one valid chain under 100 concurrent calls', async () => {
      const h = await start();
      const [a, b] = await Promise.all([h.client(), h.client('sse')]);
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          (i % 2 === 0 ? a : b).callTool({
            name: i % 3 === 0 ? 'perception_embed' : 'perception_weather',
            arguments: { h3_cell: i % 5 === 0 ? INSIDE : CELL },
          }),
        ),
      );
      assert.equal(results.filter((r) => r.isError !== true).length, 66);
      const chain = ok<ChainVerification>(await a.callTool({ name: 'idn_verify_chain', arguments: {} }));
      assert.equal(chain.is_valid, true, chain.issues.join('; '));
      assert.equal(chain.block_count, 100);
      const blocks = await store.blocks(h.agent.publicKey);
      assert.deepEqual(
        blocks.map((b) => b.index),
        Array.from({ length: 101 }, (_, i) => i),
      );
      assert.equal((await h.get('/health')).body.chain_tip, 101);
    });

    it('detects a block edited in the store and names it', async () => {
      const h = await start();
      const client = await h.client('streamable', { token: true });
      for (let i = 0; i < 4; i++)
        ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
      const row = db
        .prepare<[string], { data_to_sign: string }>(
          'SELECT data_to_sign FROM audit_blocks WHERE agent_pk = ? AND idx = 2',
        )
        .get(h.agent.publicKey)!;
      const edited = JSON.parse(row.data_to_sign) as { loc_cell: string; loc_res: number };
      edited.loc_cell = INSIDE;
      edited.loc_res = 7;
      db.prepare('UPDATE audit_blocks SET data_to_sign = ? WHERE agent_pk = ? AND idx = 2').run(
        canonicalJson(edited),
        h.agent.publicKey,
      );
      const rep = await report(h);
      assert.equal(rep.chain_verification.is_valid, false);
      assert.ok(rep.chain_verification.issues.length > 0);
      assert.ok(
        rep.chain_verification.issues.every((issue) => issue.startsWith('block 2:')),
        rep.chain_verification.issues.join('; '),
      );
      assert.match(rep.chain_verification.issues.join('; '), /signature does not verify/);
      assert.deepEqual(rep.chain_verification.invalid_blocks, [2]);
      // The edited block counts for nothing: not as an operation, not for its forged cell.
      assert.equal(rep.total_operations, 3);
      assert.deepEqual(rep.jurisdiction_cells, [CELL]);
      const trust = ok(await client.callTool({ name: 'idn_get_trust_score', arguments: {} }));
      assert.equal((trust.parts as { chain_validity: number }).chain_validity, 0);
    });

    it('rolls every block since the last epoch, then answers the empty roll with HTTP 500', async () => {
      const h = await start();
      const client = await h.client('streamable', { token: true });
      for (let i = 0; i < 3; i++)
        ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
      const first = await h.post('/epoch/roll', undefined, await h.auth());
      assert.equal(first.status, 200);
      assert.deepEqual(Object.keys(first.body).sort(), [
        'block_count',
        'end_block',
        'epoch_hash',
        'epoch_index',
        'merkle_root',
        'start_block',
        'success',
        'tier_at_close',
      ]);
      assert.deepEqual(
        [
          first.body.success,
          first.body.epoch_index,
          first.body.block_count,
          first.body.start_block,
          first.body.end_block,
        ],
        [true, 0, 3, 0, 2],
      );
      assert.equal(first.body.tier_at_close, 'provisioned');
      const second = await h.post('/epoch/roll', undefined, await h.auth());
      assert.equal(second.status, 500);
      assert.deepEqual(second.body, { error: 'EPOCH: no blocks to roll since block_index 3' });

      ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
      const third = await h.post('/epoch/roll', undefined, await h.auth());
      assert.deepEqual([third.body.epoch_index, third.body.start_block, third.body.end_block], [1, 3, 3]);
      const rep = await report(h);
      assert.deepEqual(
        rep.epochs.map((e) => [e.epoch_index, e.start_block, e.end_block]),
        [
          [0, 0, 2],
          [1, 3, 3],
        ],
      );
    });
  });

  describe('HTTP', () => {
    it('GET /health has the docs/protocol.md §2.8 fields, chain_tip the next block index', async () => {
      const h = await start();
      const health = await h.get('/health');
      assert.equal(health.status, 200);
      assert.deepEqual(health.body, {
        status: 'ok',
        service: 'geofabric-perception',
        version: '0.3.1',
        audit_active: true,
        agent_pk: h.agent.publicKey,
        chain_tip: 0,
        tools: TOOL_NAMES,
      });
      const weather = await h.get('/test/weather');
      assert.equal(weather.status, 200);
      assert.deepEqual(weather.body, { h3_cell: CELL, temperature_c: 14.3, status: 'ok' });
      assert.equal((await h.get('/health')).body.chain_tip, 1, '/test/weather dropped a breadcrumb');
    });

    it('reports on two agents whose chains share the store, each from its own blocks', async () => {
      const alice = await start();
      const bob = await start({ agent: generateKeyPair() });
      const aliceClient = await alice.client('streamable', { token: true });
      const bobClient = await bob.client('sse', { token: true });
      for (let i = 0; i < 3; i++)
        ok(await aliceClient.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
      ok(await bobClient.callTool({ name: 'perception_fetch_tile', arguments: { h3_cell: INSIDE } }));
      toolError(await bobClient.callTool({ name: 'perception_weather', arguments: { h3_cell: PARIS } }));

      const aliceReport = await report(alice, `/compliance/${alice.agent.publicKey}`);
      assert.equal(aliceReport.agent_pk, alice.agent.publicKey);
      assert.equal(aliceReport.total_operations, 3);
      assert.deepEqual(aliceReport.violations, []);

      // Alice's server reports on Bob from Bob's chain in the shared store.
      const bobReport = await report(alice, `/compliance/${bob.agent.publicKey}`);
      assert.equal(bobReport.agent_pk, bob.agent.publicKey);
      assert.deepEqual(bobReport.operations_by_tool, { perception_fetch_tile: 1 });
      assert.deepEqual(bobReport.jurisdiction_cells, [INSIDE]);
      assert.equal(bobReport.chain_verification.block_count, 2);
      assert.equal(bobReport.chain_verification.is_valid, true);
      assert.deepEqual(
        bobReport.violations.map((v) => v.type),
        ['jurisdiction_breach'],
      );
      assert.deepEqual(bobReport.delegation_certificate, {
        known: false,
        agent_pk: bob.agent.publicKey,
        cert_hash: bobReport.chain_verification.delegation_cert_hash,
        principal_local: false,
      });
      // Bob's own server shows his certificate.
      const bobOwn = await report(bob);
      assert.equal(bobOwn.principal_pk, bob.human.publicKey);
      assert.equal(bobOwn.delegation_certificate.agent_pk, bob.agent.publicKey);
      assert.equal(bobOwn.total_operations, 1);
      // With Bob's chain known, Alice's server shows it too.
      const aware = await start({ knownChains: [bob.chain] });
      assert.equal((await report(aware, `/compliance/${bob.agent.publicKey}`)).principal_pk, bob.human.publicKey);

      assert.equal((await alice.get(`/compliance/${'e'.repeat(64)}`)).status, 404);
      assert.deepEqual((await alice.get('/compliance/not-a-key')).body.error, 'invalid_public_key');
    });

    it('reports a period, anchored on the block before it, and refuses bad dates', async () => {
      const h = await start();
      const client = await h.client('streamable', { token: true });
      for (let i = 0; i < 4; i++) {
        ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
        now += 60_000;
      }
      const from = new Date(NOW + 90_000).toISOString();
      const rep = await report(h, `/compliance?from=${from}&to=${new Date(NOW + 150_000).toISOString()}`);
      assert.equal(rep.total_operations, 1);
      assert.equal(rep.chain_verification.block_count, 1);
      assert.equal(rep.chain_verification.is_valid, true, rep.chain_verification.issues.join('; '));
      assert.deepEqual(rep.reporting_period, { from, to: new Date(NOW + 150_000).toISOString() });
      const defaults = await report(h);
      assert.deepEqual(defaults.reporting_period, {
        from: '2020-01-01T00:00:00.000Z',
        to: new Date(now).toISOString(),
      });

      for (const query of ['from=yesterday', 'to=2026-13-01', 'from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z']) {
        const res = await h.get(`/compliance?${query}`);
        assert.equal(res.status, 400, query);
        assert.equal(res.body.error, 'invalid_date');
      }
    });

    it('records human approvals signed by the root principal, and counts them', async () => {
      const h = await start({
        constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS], require_human_approval: true },
      });
      const client = await h.client('streamable', { token: true });
      ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
      ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
      const approval = (signer: KeyPair, block_index: number, principal_pk = signer.publicKey) => {
        const unsigned = {
          version: 1 as const,
          agent_pk: h.agent.publicKey,
          principal_pk,
          block_index,
          approved_at: new Date(now).toISOString(),
        };
        return { ...unsigned, signature: signMessage(signer.secretKey, approvalSigningString(unsigned)) };
      };
      const created = await h.post('/approvals', approval(h.human, 0));
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal((await h.post('/approvals', approval(h.human, 0))).status, 409);
      assert.equal((await h.post('/approvals', approval(generateKeyPair(), 1))).body.error, 'delegation_invalid');
      const forged = {
        ...approval(h.human, 1),
        signature: approval(generateKeyPair(), 1, h.human.publicKey).signature,
      };
      assert.equal((await h.post('/approvals', forged)).body.error, 'invalid_signature');
      assert.equal((await h.post('/approvals', approval(h.human, 7))).body.error, 'record_not_found');
      assert.equal((await h.post('/approvals', { block_index: 1 })).body.error, 'invalid_request');

      const rep = await report(h);
      assert.equal(rep.human_approvals_required, 2);
      assert.equal(rep.human_approvals_received, 1);
    });

    it('refuses a foreign Origin on the MCP routes and admits loopback and configured ones', async () => {
      const h = await start({ allowedOrigins: ['https://console.example.org'] });
      const init = {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      };
      const mcp = (origin?: string) =>
        fetch(`${h.url}/mcp`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...(origin ? { origin } : {}),
          },
          body: JSON.stringify(init),
        });
      const foreign = await mcp('https://evil.example.com');
      assert.equal(foreign.status, 403);
      // A JSON-RPC error without an id, as the MCP transport spec allows, so an SDK surfaces the reason.
      const refusal = (await foreign.json()) as { id: unknown; error: { data: { reason: string } } };
      assert.equal(refusal.id, null);
      assert.equal(refusal.error.data.reason, 'origin_not_allowed');
      for (const path of ['/sse', '/message?sessionId=x']) {
        const res = await fetch(`${h.url}${path}`, {
          method: path === '/sse' ? 'GET' : 'POST',
          headers: { origin: 'http://evil.example.com' },
        });
        assert.equal(res.status, 403, path);
        await res.body?.cancel();
      }
      assert.equal((await mcp('null')).status, 403);
      for (const origin of [
        undefined,
        'http://localhost:6274',
        'http://127.0.0.1:3000',
        'https://console.example.org',
      ]) {
        const res = await mcp(origin);
        assert.equal(res.status, 200, String(origin));
        if (origin) assert.equal(res.headers.get('access-control-allow-origin'), origin);
        await res.body?.cancel();
      }
    });

    it('answers only loopback or configured Host names while bound to loopback (DNS rebinding)', async () => {
      const h = await start({ allowedOrigins: ['https://console.example.org'] });
      const { port } = new URL(h.url);
      const status = (host: string) =>
        new Promise<number>((resolve, reject) => {
          const req = httpRequest({ host: '127.0.0.1', port, path: '/health', headers: { host } }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
          req.end();
        });
      assert.equal(await status(`rebound.example.com:${port}`), 403);
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, 'console.example.org']) {
        assert.equal(await status(host), 200, host);
      }
    });

    it('answers unknown routes and sessions with JSON errors', async () => {
      const h = await start();
      assert.deepEqual((await h.get('/nope')).body.error, 'not_found');
      const unknown = await fetch(`${h.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'mcp-session-id': 'gone',
          accept: 'application/json, text/event-stream',
        },
        body: '{}',
      });
      assert.equal(unknown.status, 404);
      assert.equal((await h.post('/message?sessionId=gone', {})).status, 404);
    });
  });
});
