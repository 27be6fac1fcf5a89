import assert from 'node:assert/strict';
import { z } from 'zod';
import {
  buildOpenApiDocument,
  defaultOperationId,
  openApiPath,
  undocumentedRoutes,
} from '../../api/openapi-document.js';
import { route, type RouteSpec } from '../../api/route-spec.js';
import { computeRequestSchema } from '../../api/schemas/compute-request.js';
import { pass } from '../../core/check.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const noop = async () => undefined;
const anyInput = () => pass(undefined);

describe('OpenAPI generation (api/openapi-document.ts)', () => {
  it("turns Koa's path parameters into OpenAPI's, in order", () => {
    assert.deepEqual(openApiPath('/v1/tiles/:h3_cell/:zoom/:file'), {
      path: '/v1/tiles/{h3_cell}/{zoom}/{file}',
      params: ['h3_cell', 'zoom', 'file'],
    });
    assert.deepEqual(openApiPath('/dashboard/assets/*path'), { path: '/dashboard/assets/{path}', params: ['path'] });
    assert.deepEqual(openApiPath('/health'), { path: '/health', params: [] });
  });

  it('derives readable, distinct operation ids', () => {
    assert.equal(defaultOperationId('GET', '/v1/compute/:jobId'), 'getV1ComputeByJobId');
    assert.equal(defaultOperationId('POST', '/store/proof/:record_id'), 'postStoreProofByRecordId');
    assert.equal(defaultOperationId('GET', '/openapi.json'), 'getOpenapiJson');
    assert.equal(defaultOperationId('GET', '/svc/workers/:pk/earnings'), 'getSvcWorkersByPkEarnings');
  });

  it('lists and marks a route without docs, so the reference test fails for it', () => {
    const bare = route({ method: 'GET', path: '/bare/:id', auth: 'public', preflight: anyInput, handler: noop });
    assert.deepEqual(undocumentedRoutes([bare]), ['GET /bare/:id']);
    const doc = buildOpenApiDocument([bare], { version: '1.2.3' }) as Json;
    const operation = doc.paths['/bare/{id}'].get as Json;
    assert.equal(operation['x-undocumented'], true);
    assert.deepEqual(operation.parameters[0], { name: 'id', in: 'path', required: true, schema: { type: 'string' } });
  });

  it('documents body, parameters, security and the codes of the gates and of the route', () => {
    const body = z.strictObject({ requester_pk: z.string(), signature: z.string(), n: z.int().default(1) });
    const answer = z.object({ ok: z.boolean() });
    const signed: RouteSpec<unknown> = route({
      method: 'POST',
      path: '/things/:id',
      auth: 'signed',
      jsonBody: true,
      preflight: anyInput,
      handler: noop,
      docs: {
        summary: 'Make a thing',
        tags: ['Compute'],
        body,
        params: z.object({ id: z.string().describe('The thing') }),
        query: z.object({ dry: z.enum(['yes', 'no']).optional() }),
        responses: { 201: { description: 'Made', schema: answer } },
        errors: ['invalid_request', 'no_workers'],
      },
    });
    const doc = buildOpenApiDocument([signed], { version: '1.0.0', publicUrl: 'https://gf.example' });
    assert.deepEqual(doc.servers, [{ url: 'https://gf.example' }]);
    const op = (doc.paths as Json)['/things/{id}'].post as Json;
    assert.deepEqual(op.security, [{ signature: [] }]);
    assert.deepEqual(op.parameters.slice(0, 2), [
      { name: 'id', in: 'path', required: true, description: 'The thing', schema: { type: 'string' } },
      { name: 'dry', in: 'query', required: false, schema: { type: 'string', enum: ['yes', 'no'] } },
    ]);
    assert.deepEqual(op.requestBody.content['application/json'].schema, {
      $ref: '#/components/schemas/PostThingsByIdRequest',
    });
    // Requests are zod's input: a field with a default is optional.
    const request = (doc.components as Json).schemas.PostThingsByIdRequest;
    assert.deepEqual(request.required, ['requester_pk', 'signature']);
    assert.deepEqual(op.responses['201'].content['application/json'].schema, {
      $ref: '#/components/schemas/PostThingsByIdResponse201',
    });
    assert.deepEqual(op.responses['401']['x-error-codes'], [
      'signature_required',
      'invalid_signature',
      'stale_request',
    ]);
    assert.ok(op.responses['400']['x-error-codes'].includes('invalid_request'));
    assert.ok(op.responses['400']['x-error-codes'].includes('invalid_json'));
    assert.deepEqual(op.responses['503']['x-error-codes'], ['no_workers', 'store_unavailable']);
    assert.ok(op.responses['503'].headers['Retry-After'], '503 and 429 say when to retry');
    assert.deepEqual(op.responses['500']['x-error-codes'], ['internal_error']);
    assert.deepEqual(op.responses['500'].content['application/json'].schema, {
      $ref: '#/components/schemas/Error',
      properties: { error: { enum: ['internal_error'] } },
    });
    assert.deepEqual(op.responses.default, { $ref: '#/components/responses/Error' });
    assert.deepEqual(Object.keys(op.responses), [
      '201',
      '400',
      '401',
      '403',
      '408',
      '413',
      '414',
      '415',
      '429',
      '500',
      '503',
      '507',
      'default',
    ]);
  });

  it('names a schema after its operation, or by its component name; used both ways it gets an input twin', () => {
    const thing = z.object({ n: z.int().default(1) });
    const echo = (path: string, schema: z.ZodType) =>
      route({
        method: 'POST',
        path,
        auth: 'public',
        jsonBody: true,
        preflight: anyInput,
        handler: noop,
        docs: { summary: 'Echo', tags: ['Service'], body: schema, responses: { 200: { description: 'Same', schema } } },
      });
    const doc = buildOpenApiDocument([echo('/echo', thing), echo('/job', computeRequestSchema)], { version: '1' });
    const schemas = (doc.components as Json).schemas;
    const ref = (path: string, where: 'request' | 'response') => {
      const op = (doc.paths as Json)[path].post;
      const media = where === 'request' ? op.requestBody.content : op.responses['200'].content;
      return media['application/json'].schema.$ref as string;
    };
    assert.equal(ref('/echo', 'request'), '#/components/schemas/PostEchoRequest');
    assert.equal(ref('/echo', 'response'), '#/components/schemas/PostEchoResponse');
    assert.equal(schemas.PostEchoRequest.required, undefined, 'input: n may be left out');
    assert.deepEqual(schemas.PostEchoResponse.required, ['n'], 'output: n is always there');
    // A named schema keeps its name where it is an answer; as a request (zod input) it differs, so it is a twin.
    assert.equal(ref('/job', 'response'), '#/components/schemas/ComputeRequest');
    assert.equal(ref('/job', 'request'), '#/components/schemas/ComputeRequestInput');
    assert.ok(schemas.ComputeRequest.required.includes('budget_credits'));
    assert.ok(!schemas.ComputeRequestInput.required.includes('budget_credits'));
    assert.ok(schemas.ComputeStep, 'the nested named step schema is a component too');
  });

  it('is deterministic', () => {
    const make = () =>
      buildOpenApiDocument(
        [
          route({
            method: 'GET',
            path: '/a',
            auth: 'api_key',
            preflight: anyInput,
            handler: noop,
            docs: { summary: 'A', tags: ['Chat'], responses: { 200: { description: 'ok', schema: z.object({}) } } },
          }),
        ],
        { version: '1.0.0' },
      );
    assert.equal(JSON.stringify(make()), JSON.stringify(make()));
  });
});
