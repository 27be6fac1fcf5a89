/**
 * A gateway with something to show: signed workers in several cells and hardware tiers,
 * completed compound jobs on a fake backbone and a fake local worker runtime (so the inference audit holds
 * both providers), a sealed epoch whose records have proofs, a pending record in the open epoch, tiles from a
 * local XYZ server, and a real perception server whose agent has audited calls (for the compliance view).
 * Used by the dashboard's browser test; also handy for looking at the dashboard by hand.
 */
import { latLngToCell } from 'h3-js';
import type { TileConfig } from '../../activities/tiles/index.js';
import { issueCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS, epochAt } from '../../core/epoch.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { TILE_STYLES } from '../../core/tile-styles.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';
import { createPerceptionServer, type PerceptionServer } from '../../mcp/perception/server.js';
import { createWeatherTool } from '../../mcp/perception/tools/weather.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { agentToken, tokenVerifierOf } from './agent-token.js';
import { startFakeRuntime, type FakeRuntime } from './fake-openai-runtime.js';
import { startGateway } from './gateway.js';
import { signJob } from './jobs.js';
import { startOpenMeteoServer, type OpenMeteoServer } from './open-meteo-server.js';
import { sealThrough } from './proofs.js';
import { startXyzServer, type XyzServer } from './xyz-server.js';

export const WORKER_MODEL = 'lfm2.5-1.2b-instruct';
export const BACKBONE_MODEL = 'llama-3.3-70b-versatile';
const HOUR = 3_600_000;

/** The seeded swarm: one worker per row, in distinct cells (resolution 6) of four countries. */
export const SEEDED_WORKERS = [
  { name: 'rome', cell: '861e8050fffffff', tier: 2, relay: false, gpu: 'NVIDIA GeForce RTX 3060' },
  { name: 'milan', cell: latLngToCell(45.4642, 9.19, 6), tier: 1, relay: false, gpu: null },
  { name: 'paris', cell: latLngToCell(48.8566, 2.3522, 6), tier: 3, relay: false, gpu: 'NVIDIA RTX A6000' },
  { name: 'berlin', cell: latLngToCell(52.52, 13.405, 6), tier: 1, relay: false, gpu: null },
  { name: 'naples', cell: latLngToCell(40.8518, 14.2681, 6), tier: 2, relay: true, gpu: 'NVIDIA GeForce RTX 4070' },
] as const;

export interface SeededDashboard {
  url: string;
  gw: Awaited<ReturnType<typeof startGateway>>;
  /** The gateway's proof database, for tests that tamper with it the way an attacker with SQL access would. */
  db: SqliteDatabase;
  xyz: XyzServer;
  perceptionUrl: string;
  agent: KeyPair;
  workers: { name: string; pk: string; cell: string; tier: number }[];
  /** Completed jobs, oldest first. */
  jobIds: string[];
  /** Records of the sealed epoch (verifiable), and one record of the open epoch (pending). */
  sealedRecordIds: string[];
  pendingRecordId: string;
  sealedEpoch: number;
  close(): Promise<void>;
}

/** The seeded gateway's OPERATOR_TOKEN: the dashboard sends it to list jobs and inferences. */
export const DASHBOARD_OPERATOR_TOKEN = 'dashboard-operator-token';

/** Starts everything on loopback ephemeral ports; the gateway's clock stands still once seeding is done. */
export async function startSeededDashboard(): Promise<SeededDashboard> {
  const closers: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const closeOne of closers.splice(0).reverse()) await closeOne().catch(() => undefined);
  };
  try {
    // A recent epoch, so dates in the dashboard look current; sealed once the clock moves into the next one.
    const sealedEpoch = epochAt(Date.now(), DEFAULT_EPOCH_GENESIS_MS) - 1;
    let now = DEFAULT_EPOCH_GENESIS_MS + sealedEpoch * EPOCH_MS + 5 * 60_000;

    const xyz = await startXyzServer();
    closers.push(() => xyz.close());
    const backbone: FakeRuntime = await startFakeRuntime('backbone', () => ({
      content: 'Villa Borghese, Villa Ada and Villa Doria Pamphili.',
      usage: { prompt_tokens: 31, completion_tokens: 12 },
    }));
    closers.push(() => backbone.close());
    const local: FakeRuntime = await startFakeRuntime('worker', () => ({
      content: 'The Tiber runs through the cell.',
      usage: { prompt_tokens: 18, completion_tokens: 7 },
    }));
    closers.push(() => local.close());

    const perception = await startPerception();
    closers.push(() => perception.close());

    const db = openSqlite(':memory:');
    const gw = await startGateway({
      clock: () => now,
      proofs: createSqliteProofStore(db),
      config: { perceptionUrl: perception.url, operatorToken: DASHBOARD_OPERATOR_TOKEN },
      tiles: {
        templates: Object.fromEntries(TILE_STYLES.map((s) => [s, xyz.template('png')])) as TileConfig['templates'],
        timeoutMs: 2000,
      },
      swarm: { backboneUrl: backbone.url, workerRuntimeUrl: local.url, workerModels: [WORKER_MODEL] },
    });
    closers.push(async () => {
      await gw.close();
      db.close();
    });

    const alice = generateKeyPair();
    const jobIds: string[] = [];
    const submit = async (body: Record<string, unknown>) => {
      const signed = signJob(alice, { budget_credits: 0.1, created_at: new Date(now).toISOString(), ...body });
      const res = await gw.post('/v1/compute', signed.body, signed.headers);
      if (res.status !== 200) throw new Error(`seeding a job failed: ${res.status} ${res.text}`);
      const job = res.body as { job_id: string };
      jobIds.push(job.job_id);
      return job;
    };
    const ask = (id: string, prompt: string, model?: string) => ({
      id,
      type: 'inference',
      ...(model === undefined ? {} : { model }),
      messages: [{ role: 'user', content: prompt }],
    });

    // Epoch E: three jobs — the local worker's model, the backbone's, and an inference → tile chain.
    await submit({ h3_cell: '861e8050fffffff', steps: [ask('ask', 'Where does the Tiber run?', WORKER_MODEL)] });
    now += 60_000;
    await submit({ h3_cell: '861e8050fffffff', steps: [ask('ask', 'Three parks in Rome', BACKBONE_MODEL)] });
    now += 60_000;
    await submit({
      h3_cell: '861e8050fffffff',
      steps: [
        ask('explain', 'Name a park in the cell', BACKBONE_MODEL),
        { id: 'map', type: 'tile_render', depends_on: 'explain', zoom: 12, style: 'osm-bright' },
      ],
    });
    await gw.writer.flush();
    const sealedRecordIds = (await gw.proofs.queryRecords({ limit: 100, epochStart: sealedEpoch })).records.map(
      (r) => r.id,
    );
    if (sealedRecordIds.length === 0) throw new Error('seeding wrote no records');

    // This node's own worker stops beating (its 30 s timer would otherwise mark it online again in E + 1
    // whenever a slow run crosses a beat): the swarm shown is exactly the registrations below.
    gw.swarm.stop();

    // Epoch E + 1: the sealer closes E; the swarm registers (online now); one more job stays pending.
    now = DEFAULT_EPOCH_GENESIS_MS + (sealedEpoch + 1) * EPOCH_MS + 2 * 60_000;
    await sealThrough(gw.proofs, gw.node, sealedEpoch);
    const workers = [];
    for (const w of SEEDED_WORKERS) {
      const key = generateKeyPair();
      const signed = signJob(key, {
        h3_cell: w.cell,
        models: w.tier === 1 ? ['tinyllama'] : [WORKER_MODEL, 'tinyllama'],
        tools: w.tier === 1 ? [] : ['web-search'],
        hardware: {
          platform: 'linux-x64',
          gpu: w.gpu,
          vram_gb: w.tier === 3 ? 48 : w.gpu ? 12 : 0,
          ram_gb: 16,
          cores: 8,
        },
        hardware_tier: w.tier,
        relay: w.relay,
        version: '0.1.0',
        created_at: new Date(now).toISOString(),
      });
      const res = await gw.post('/svc/workers/register', signed.body, signed.headers);
      if (res.status !== 201) throw new Error(`registering ${w.name} failed: ${res.status} ${res.text}`);
      workers.push({ name: w.name, pk: key.publicKey, cell: w.cell, tier: w.tier });
    }
    await submit({ h3_cell: '861e8050fffffff', steps: [ask('ask', 'And in the evening?', BACKBONE_MODEL)] });
    await gw.writer.flush();
    const pendingRecordId = `compute:${jobIds[jobIds.length - 1]}`;

    return {
      url: gw.url,
      gw,
      db,
      xyz,
      perceptionUrl: perception.url,
      agent: perception.agent,
      workers,
      jobIds,
      sealedRecordIds,
      pendingRecordId,
      sealedEpoch,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The perception server with the weather tool on a fake Open-Meteo, after two audited calls. */
async function startPerception(): Promise<{ url: string; agent: KeyPair; close(): Promise<void> }> {
  const meteo: OpenMeteoServer = await startOpenMeteoServer();
  const auditDb = openSqlite(':memory:');
  const store = createSqliteAuditStore(auditDb);
  const agent = generateKeyPair();
  const human = generateKeyPair();
  const issuer = generateKeyPair();
  const now = Date.now();
  const cert = issueCertificate(human.secretKey, {
    agent_pk: agent.publicKey,
    h3_cells: [DEFAULT_PERCEPTION_CELL],
    facets: ['perception', 'compliance'],
    not_before: new Date(now - 24 * HOUR).toISOString(),
    not_after: new Date(now + 30 * 24 * HOUR).toISOString(),
    max_depth: 0,
    constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS] },
  });
  const server: PerceptionServer = createPerceptionServer({
    store,
    agent,
    chain: [cert],
    principalLocal: false,
    testRoutes: true,
    tokenVerifier: tokenVerifierOf(issuer),
    tools: [
      createWeatherTool({ weatherUrl: meteo.url, timeoutMs: 2000, userAgent: 'geofabric-test', clock: Date.now }),
    ],
  });
  const { url } = await server.listen(0, '127.0.0.1');
  // Under the agent's own token: anonymous calls count as no operation.
  const authorization = `Bearer ${await agentToken({ issuer, chain: [cert], nowMs: now })}`;
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${url}/test/weather`, { headers: { authorization } });
    if (!res.ok) throw new Error(`perception /test/weather failed: ${res.status} ${await res.text()}`);
  }
  return {
    url,
    agent,
    close: async () => {
      await server.close();
      await store.close();
      auditDb.close();
      await meteo.close();
    },
  };
}
