/**
 * A local GPU inference endpoint speaking Geofabric's classify protocol v1 (mcp/perception/tools/classify.ts):
 * `POST /v1/classify` with `{ h3_cell, model, task, bbox, geometry }` → 200 `{ model, task, flood_fraction,
 * classes, confidence, … }`; 400 `{ error: "invalid_request" | "unsupported_task", detail }` for bad requests;
 * 404 `{ error: "unknown_model", detail }` for a model it does not serve. Tests may replace the answer or
 * make the endpoint fail or hang.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ClassifyServer {
  url: string;
  /** Every request body received, in order. */
  requests: Record<string, unknown>[];
  /** Models the endpoint serves (default: prithvi-flood). */
  models: Set<string>;
  /** Answer this body (status 200 unless given) instead of the computed result; undefined → compute again. */
  respondWith(body: unknown, status?: number): void;
  /** Answer this status, or never answer; undefined → heal. */
  failWith(fault: number | 'hang' | undefined): void;
  close(): Promise<void>;
}

const isBbox = (v: unknown) => Array.isArray(v) && v.length === 4 && v.every((x) => typeof x === 'number');

export async function startClassifyServer(): Promise<ClassifyServer> {
  const state = {
    requests: [] as Record<string, unknown>[],
    models: new Set(['prithvi-flood']),
    canned: undefined as { body: unknown; status: number } | undefined,
    fault: undefined as number | 'hang' | undefined,
  };

  const server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const send = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.method !== 'POST' || new URL(req.url ?? '/', 'http://x').pathname !== '/v1/classify') {
        return send(404, { error: 'not_found' });
      }
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        return send(400, { error: 'invalid_request', detail: 'the body is not JSON' });
      }
      state.requests.push(body);
      if (state.fault === 'hang') return;
      if (typeof state.fault === 'number') return send(state.fault, { error: 'internal', detail: 'GPU out of memory' });
      if (state.canned) return send(state.canned.status, state.canned.body);
      const { h3_cell, model, task, bbox } = body;
      if (typeof h3_cell !== 'string' || typeof model !== 'string' || typeof task !== 'string' || !isBbox(bbox)) {
        return send(400, { error: 'invalid_request', detail: 'h3_cell, model, task and bbox are required' });
      }
      if (!state.models.has(model))
        return send(404, { error: 'unknown_model', detail: `model ${model} is not loaded` });
      if (task !== 'flood_detection') return send(400, { error: 'unsupported_task', detail: `task ${task}` });
      send(200, {
        model,
        task,
        flood_fraction: 0.12,
        classes: { flood_water: 0.12, permanent_water: 0.03, land: 0.85 },
        confidence: 0.93,
        scene_id: 'S2B_33TTG_20260225_0_L2A',
        model_version: '2.0.0',
        inference_ms: 37,
        gpu: 'test-gpu',
      });
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: state.requests,
    models: state.models,
    respondWith: (body, status = 200) => {
      state.canned = body === undefined ? undefined : { body, status };
    },
    failWith: (fault) => {
      state.fault = fault;
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
