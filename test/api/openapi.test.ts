import assert from 'node:assert/strict';
import { pino } from 'pino';
import type Router from '@koa/router';
import type { AppDeps } from '../../api/app-deps.js';
import { createApp } from '../../api/app.js';
import { TAGS } from '../../api/openapi-document.js';
import { SERVICE_VERSION } from '../../api/version.js';
import { STEP_TYPE_SPECS, STEP_TYPES } from '../../core/step-types/index.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every (method, path) the app's router answers, read from the router itself (HEAD rides along with GET). */
function routerRoutes(): string[] {
  // Routes are built without touching their dependencies; only the routing table is read here.
  const app = createApp({
    config: { requireDelegation: false, bodyLimitBytes: 1024, epochGenesisMs: 0, apiKeys: [] },
    clock: Date.now,
    logger: pino({ level: 'silent' }),
    tiles: { cacheSize: () => ({ entries: 0, bytes: 0 }) },
    nodePk: '0'.repeat(64),
  } as unknown as AppDeps);
  const dispatch = app.middleware.find((m) => (m as { router?: Router }).router !== undefined) as
    { router: Router } | undefined;
  assert.ok(dispatch, 'the app mounts a router');
  return dispatch.router.stack.flatMap((layer) =>
    layer.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${layer.path}`),
  );
}

/** Resolves a local JSON pointer (`#/components/schemas/Error`) in the document. */
function resolve(doc: Json, ref: string): unknown {
  assert.ok(ref.startsWith('#/'), `only local references: ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((node, key) => (node as Json | undefined)?.[key], doc);
}

function refsIn(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v) => refsIn(v, found));
  else if (typeof value === 'object' && value !== null) {
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref' && typeof inner === 'string') found.push(inner);
      else refsIn(inner, found);
    }
  }
  return found;
}

const operations = (doc: Json) =>
  Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ path, method, op: op as Json })),
  );

describe('GET /openapi.json', () => {
  let gw: TestGateway;
  let doc: Json;
  before(async () => {
    gw = await startGateway();
    const res = await gw.get('/openapi.json');
    assert.equal(res.status, 200);
    doc = res.body as Json;
  });
  after(() => gw.close());

  it('is public, cacheable, readable from any origin, with a stable ETag', async () => {
    const res = await gw.get('/openapi.json', { origin: 'https://elsewhere.example' });
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.match(res.headers.get('cache-control') ?? '', /^public, max-age=\d+$/);
    const etag = res.headers.get('etag');
    assert.ok(etag);
    const again = await gw.get('/openapi.json', { 'if-none-match': etag });
    assert.equal(again.status, 304);
    const other = await startGateway();
    try {
      const res2 = await other.get('/openapi.json');
      assert.equal(res2.headers.get('etag'), etag, 'deterministic: another gateway serves the same bytes');
      assert.equal(res2.text, res.text);
    } finally {
      await other.close();
    }
  });

  it('is an OpenAPI 3.1 document of this service version, relative to its server without PUBLIC_URL', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.jsonSchemaDialect, 'https://json-schema.org/draft/2020-12/schema');
    assert.equal(doc.info.version, SERVICE_VERSION);
    assert.equal(typeof doc.info.title, 'string');
    assert.deepEqual(doc.servers, [{ url: '/' }]);
    const known = new Set(TAGS.map((t) => t.name));
    for (const tag of doc.tags as { name: string; description: string }[]) assert.ok(known.has(tag.name));
  });

  it('names PUBLIC_URL as its server when set', async () => {
    const pub = await startGateway({ config: { publicUrl: 'https://gf.example' } });
    try {
      assert.deepEqual(((await pub.get('/openapi.json')).body as Json).servers, [{ url: 'https://gf.example' }]);
    } finally {
      await pub.close();
    }
  });

  it('documents every route of the app, with its method, and every route has docs', () => {
    const documented = new Set(operations(doc).map(({ path, method }) => `${method.toUpperCase()} ${path}`));
    const inApp = routerRoutes().map((r) => r.replace(/[:*]([A-Za-z_$][\w$]*)/g, '{$1}'));
    assert.ok(inApp.length >= 30, `the app has its routes (${inApp.length})`);
    assert.deepEqual(
      inApp.filter((r) => !documented.has(r)),
      [],
      'routes missing from the reference',
    );
    assert.equal(documented.size, inApp.length, 'nothing documented that the app does not serve');
    const undocumented = operations(doc)
      .filter(({ op }) => op['x-undocumented'] === true)
      .map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    assert.deepEqual(undocumented, [], 'add `docs` to these routes (api/route-spec.ts RouteDocs)');
  });

  it('is structurally valid: unique operation ids, declared tags, path parameters, resolvable references', () => {
    const ids = operations(doc).map(({ op }) => op.operationId as string);
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
    const tags = new Set((doc.tags as { name: string }[]).map((t) => t.name));
    const schemes = new Set(Object.keys(doc.components.securitySchemes));
    for (const { path, method, op } of operations(doc)) {
      const where = `${method.toUpperCase()} ${path}`;
      assert.equal(typeof op.summary, 'string', where);
      assert.ok(op.tags.length > 0 && op.tags.every((t: string) => tags.has(t)), `${where}: tags`);
      const params = (op.parameters as Json[]).map((p) => (p.$ref ? (resolve(doc, p.$ref as string) as Json) : p));
      for (const name of [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1])) {
        const param = params.find((p) => p.in === 'path' && p.name === name);
        assert.ok(param, `${where}: path parameter ${name}`);
        assert.equal(param.required, true, `${where}: path parameter ${name} is required`);
      }
      const seen = params.map((p) => `${p.in}:${p.name}`);
      assert.equal(new Set(seen).size, seen.length, `${where}: parameters are unique`);
      for (const p of params) assert.ok(['path', 'query', 'header'].includes(p.in) && p.schema, `${where}: ${p.name}`);
      assert.ok(Object.keys(op.responses).length > 1, `${where}: responses`);
      for (const [status, response] of Object.entries(op.responses as Json)) {
        assert.ok(/^([1-5]\d\d|default)$/.test(status), `${where}: status ${status}`);
        const r = (response.$ref ? resolve(doc, response.$ref as string) : response) as Json;
        assert.equal(typeof r.description, 'string', `${where} ${status}: description`);
      }
      for (const requirement of op.security as Json[]) {
        for (const scheme of Object.keys(requirement)) assert.ok(schemes.has(scheme), `${where}: ${scheme}`);
      }
    }
    const refs = refsIn(doc);
    assert.ok(refs.length > 100);
    for (const ref of new Set(refs)) assert.notEqual(resolve(doc, ref), undefined, `unresolved ${ref}`);
    for (const [name, schema] of Object.entries(doc.components.schemas as Json)) {
      assert.equal(schema.$schema, undefined, `${name}: no per-schema dialect`);
      assert.equal(schema.$id, undefined, `${name}: no $id`);
    }
  });

  it('states each route’s security: signed, API key or none', () => {
    const op = (path: string, method: string) => (doc.paths as Json)[path][method] as Json;
    assert.deepEqual(op('/v1/compute', 'post').security, [{ signature: [] }]);
    assert.deepEqual(op('/v1/chat/completions', 'post').security, [{ apiKey: [] }]);
    assert.deepEqual(op('/v1/models', 'get').security, [{ apiKey: [] }]);
    assert.deepEqual(op('/v1/tools', 'get').security, []);
    assert.equal(doc.components.securitySchemes.signature.name, 'X-Idn-Signature');
    assert.equal(doc.components.securitySchemes.apiKey.scheme, 'bearer');
  });

  it('describes the compute request with the docs/protocol.md §2.1 fields and docs/protocol.md §2.2 steps', () => {
    const body = doc.paths['/v1/compute'].post.requestBody.content['application/json'].schema;
    const request = resolve(doc, body.$ref as string) as Json;
    for (const field of ['requester_pk', 'h3_cell', 'steps', 'budget_credits', 'signature']) {
      assert.ok(request.properties[field], field);
    }
    assert.deepEqual([...request.required].sort(), ['requester_pk', 'signature', 'steps']);
    assert.equal(request.properties.budget_credits.default, 0.1);
    // One strict object per step type (core/step-types/), discriminated on `type`.
    const step = resolve(doc, request.properties.steps.items.$ref as string) as Json;
    const variants = step.oneOf as Json[];
    assert.deepEqual(
      variants.map((v) => v.properties.type.const),
      [...STEP_TYPES],
    );
    const variant = (type: string) => variants.find((v) => v.properties.type.const === type)!;
    for (const v of variants) {
      assert.equal(v.additionalProperties, false);
      for (const field of ['id', 'type', 'depends_on', 'context']) assert.ok(v.properties[field], field);
    }
    for (const type of STEP_TYPES) {
      for (const field of Object.keys(STEP_TYPE_SPECS[type].fields)) assert.ok(variant(type).properties[field], field);
    }
    const tile = variant('tile_render');
    assert.deepEqual([tile.properties.zoom.minimum, tile.properties.zoom.maximum], [0, 20]);
    assert.equal(tile.properties.messages, undefined);
  });

  it('lists the docs/protocol.md §7 error codes where routes produce them, on the shared Error schema', () => {
    const codes = (path: string, method: string, status: string) =>
      (doc.paths as Json)[path][method].responses[status]?.['x-error-codes'] as string[] | undefined;
    assert.ok(codes('/v1/compute', 'post', '401')?.includes('signature_required'));
    assert.ok(codes('/v1/compute', 'post', '503')?.includes('no_workers'));
    assert.ok(codes('/v1/compute', 'post', '504')?.includes('job_timeout'));
    assert.ok(codes('/v1/chat/completions', 'post', '401')?.includes('unauthorized'));
    // OpenAI's status for an unknown model, and OpenAI's error shape with OpenAI's codes.
    assert.ok(codes('/v1/chat/completions', 'post', '404')?.includes('invalid_model'));
    const notFound = (doc.paths as Json)['/v1/chat/completions'].post.responses['404'].content['application/json'];
    assert.equal(notFound.schema.$ref, '#/components/schemas/OpenAiError');
    assert.deepEqual(notFound.schema.properties.error.properties.code.enum, ['model_not_found']);
    assert.ok(doc.components.schemas.OpenAiError);
    assert.ok(codes('/v1/imagery/ndvi', 'get', '400')?.includes('cell_required'));
    assert.ok(codes('/v1/tiles/{h3_cell}/{zoom}/{file}', 'get', '400')?.includes('invalid_cell'));
    assert.ok(codes('/store/proof/{record_id}', 'get', '404')?.includes('record_not_found'));
    assert.ok(codes('/health', 'get', '429')?.includes('rate_limit'));
    assert.ok(codes('/health', 'get', '500')?.includes('internal_error'));
    assert.equal(codes('/health', 'get', '401'), undefined, 'a public route answers no 401');
    const error = doc.components.schemas.Error as Json;
    assert.equal(error.properties.error.type, 'string');
    assert.deepEqual(error.required, ['error']);
  });
});
