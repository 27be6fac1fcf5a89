/**
 * The API reference page's view model (dashboard/reference/reference-model.js) over the gateway's real
 * `/openapi.json`: what the page draws, tested without a browser.
 */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { STEP_TYPES } from '../../core/step-types/index.js';
import { startGateway } from '../helpers/gateway.js';

interface SchemaNode {
  name: string;
  type: string;
  required: boolean;
  nullable: boolean;
  description: string;
  facts: string[];
  ref: string | null;
  children: SchemaNode[];
}
interface OperationView {
  id: string;
  method: string;
  path: string;
  summary: string;
  description: string;
  security: string;
  parameters: { name: string; in: string; required: boolean; description: string; schema: SchemaNode }[];
  body: { contentTypes: string[]; schema: SchemaNode } | null;
  responses: {
    status: string;
    description: string;
    contentTypes: string[];
    schema: SchemaNode | null;
    headers: { name: string; description: string }[];
    errorCodes: string[];
  }[];
  errorCodes: { status: string; codes: string[] }[];
}
interface ReferenceModel {
  title: string;
  version: string;
  description: string;
  servers: string[];
  tags: { name: string; description: string; operations: OperationView[] }[];
  errors: { code: string; statuses: string[] }[];
  operationCount: number;
}
interface ReferenceModule {
  buildReferenceModel(doc: unknown): ReferenceModel;
  filterModel(model: ReferenceModel, query: string): ReferenceModel;
  schemaTree(doc: unknown, schema: unknown, name?: string, required?: boolean): SchemaNode;
}

const modulePath = pathToFileURL(resolve(import.meta.dirname, '../../dashboard/reference/reference-model.js')).href;
const page = (await import(modulePath)) as ReferenceModule;

const child = (node: SchemaNode, name: string): SchemaNode => {
  const found = node.children.find((c) => c.name === name);
  assert.ok(found, `${node.name || node.type} has ${name}: ${node.children.map((c) => c.name).join(', ')}`);
  return found;
};

describe('API reference page model (dashboard/reference/reference-model.js)', () => {
  let doc: Record<string, unknown>;
  let model: ReferenceModel;
  const op = (method: string, path: string): OperationView => {
    const found = model.tags.flatMap((t) => t.operations).find((o) => o.method === method && o.path === path);
    assert.ok(found, `${method} ${path}`);
    return found;
  };

  before(async () => {
    const gw = await startGateway();
    try {
      doc = (await gw.get('/openapi.json')).body as Record<string, unknown>;
    } finally {
      await gw.close();
    }
    model = page.buildReferenceModel(doc);
  });

  it('groups every operation under its tags, in the document’s tag order', () => {
    assert.equal(model.title, 'Geofabric gateway API');
    assert.deepEqual(model.servers, ['/']);
    const paths = Object.values(doc.paths as Record<string, object>).reduce(
      (n, item) => n + Object.keys(item).length,
      0,
    );
    assert.equal(model.operationCount, paths);
    assert.deepEqual(
      model.tags.map((t) => t.name),
      (doc.tags as { name: string }[]).map((t) => t.name),
    );
    assert.deepEqual(
      model.tags.find((t) => t.name === 'Compute')?.operations.map((o) => `${o.method} ${o.path}`),
      ['POST /v1/compute', 'GET /v1/compute/recent', 'GET /v1/compute/{jobId}', 'GET /v1/compute/{jobId}/receipt'],
    );
  });

  it('shows the compute request as a readable tree, named schemas resolved', () => {
    const compute = op('POST', '/v1/compute');
    assert.match(compute.security, /X-Idn-Signature/);
    assert.equal(compute.body?.schema.ref, 'ComputeRequest');
    const request = compute.body!.schema;
    assert.equal(request.type, 'object');
    assert.equal(child(request, 'requester_pk').required, true);
    assert.equal(child(request, 'h3_cell').required, false);
    assert.ok(child(request, 'budget_credits').facts.includes('default 0.1'));
    const steps = child(request, 'steps');
    assert.equal(steps.type, 'array of ComputeStep');
    assert.ok(steps.facts.includes('min items 1') && steps.facts.includes('max items 32'), steps.facts.join());
    // One option per step type (core/step-types/), named by it, each with its own fields only.
    const step = steps.children[0]!;
    assert.equal(step.type, 'one of');
    assert.deepEqual(
      step.children.map((option) => option.name),
      [...STEP_TYPES],
    );
    for (const option of step.children) assert.ok(child(option, 'type').facts.includes(`always ${option.name}`));
    assert.deepEqual(
      child(child(step, 'tile_render'), 'zoom').facts.filter((f) => /^m(in|ax) /.test(f)),
      ['min 0', 'max 20'],
    );
    assert.ok(child(child(step, 'inference'), 'messages').children[0]?.children.some((c) => c.name === 'role'));
    assert.ok(!child(step, 'tile_render').children.some((c) => c.name === 'messages'));
  });

  it('lists parameters, responses with their schemas and headers, and the error codes per status', () => {
    const tile = op('GET', '/v1/tiles/{h3_cell}/{zoom}/{file}');
    assert.deepEqual(
      tile.parameters.filter((p) => p.in === 'path').map((p) => [p.name, p.required]),
      [
        ['h3_cell', true],
        ['zoom', true],
        ['file', true],
      ],
    );
    assert.ok(tile.parameters.some((p) => p.in === 'header' && p.name === 'x-svc-delegation-cert'));
    const ok = tile.responses.find((r) => r.status === '200')!;
    assert.deepEqual(ok.contentTypes, ['image/png', 'image/jpeg', 'image/webp']);
    assert.equal(ok.schema, null);
    assert.ok(ok.headers.some((h) => h.name === 'X-Svc-Proof'));
    assert.ok(tile.errorCodes.find((e) => e.status === '400')?.codes.includes('invalid_zoom'));
    assert.equal(tile.security, 'none (public)');

    const proof = op('GET', '/store/proof/{record_id}');
    const bundle = proof.responses.find((r) => r.status === '200')!.schema!;
    assert.equal(bundle.ref, 'ProofBundle');
    const seal = child(bundle, 'seal');
    assert.equal(seal.nullable, true);
    assert.equal(seal.ref, 'Seal');
    assert.ok(child(seal, 'merkle_root').facts.includes('pattern ^[0-9a-f]{64}$'));

    // An error response narrows the shared Error schema to its codes.
    const notFound = proof.responses.find((r) => r.status === '404')!;
    assert.deepEqual(notFound.errorCodes, ['record_not_found']);
    assert.ok(child(notFound.schema!, 'error').facts.includes('one of: record_not_found'));
    assert.ok(model.errors.some((e) => e.code === 'signature_required' && e.statuses.includes('401')));
  });

  it('says API-key routes need a bearer token', () => {
    assert.match(op('POST', '/v1/chat/completions').security, /bearer token/);
  });

  it('filters operations by words of method, path, summary or tag', () => {
    const tiles = page.filterModel(model, 'get tiles');
    assert.deepEqual(
      tiles.tags.map((t) => t.name),
      ['Tiles'],
    );
    assert.equal(page.filterModel(model, '').tags.length, model.tags.length);
    assert.equal(page.filterModel(model, 'no-such-thing-anywhere').tags.length, 0);
    assert.ok(page.filterModel(model, 'proof store').tags.every((t) => t.name === 'Proof store'));
  });

  it('survives cycles and refuses what is not OpenAPI 3.1', () => {
    const cyclic = {
      components: {
        schemas: { Node: { type: 'object', properties: { next: { $ref: '#/components/schemas/Node' } } } },
      },
    };
    const tree = page.schemaTree(cyclic, { $ref: '#/components/schemas/Node' });
    assert.equal(tree.ref, 'Node');
    assert.deepEqual(child(tree, 'next'), { ...child(tree, 'next'), type: 'Node', children: [] });
    assert.throws(() => page.buildReferenceModel({ swagger: '2.0' }), /OpenAPI 3.1/);
  });
});
