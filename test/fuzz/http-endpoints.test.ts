/**
 * Fuzz: every gateway route, read from the app's router, gets fast-check generated hostile
 * requests — raw bodies, signed bodies, query strings, path parameters, headers, methods and malformed
 * HTTP — and every answer must be a 4xx JSON error with a code of core/errors.ts whose table status it
 * carries (or a success), never a 5xx, a stack, a hang, a crash or a polluted Object.prototype.
 * FUZZ_RUNS sets the cases per route and property (default 30; FUZZ_RUNS=2000 for a long run).
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DEFAULT_JOB_CELL } from '../../core/h3-cell.js';
import { issueCertificate } from '../../core/delegation-cert.js';
import { signRequestBody } from '../../core/gates/signature.js';
import { generateKeyPair } from '../../core/identity.js';
import { WORKER_TIERS } from '../../core/tiers.js';
import { TILE_STYLES } from '../../core/tile-styles.js';
import { TOOL_IDS } from '../../core/tool-registry.js';
import { TEST_NOW } from '../helpers/imagery-fixtures.js';
import { CaseTally, fcParams, fuzzRuns, timeoutFor } from './fuzz-runs.js';
import { FUZZ_API_KEY, familyOf, startFuzzGateway, type FuzzRoute } from './fuzz-gateway.js';
import {
  PROTO_KEYS,
  POLLUTION_MARKER,
  anyJson,
  deepJsonText,
  headerText,
  hostileCell,
  hostileDate,
  hostileNumberText,
  hostilePublicKey,
  hostileZoom,
  invalidJsonText,
  invalidUtf8,
  numericEdgeText,
  sample,
  sizedJsonText,
  trickyKeysText,
} from './hostile-values.js';
import {
  assertCleanAnswer,
  prototypeSnapshot,
  send,
  sendRaw,
  type FuzzRequest,
  type FuzzResponse,
} from './http-client.js';
import { bodyFor, createdAt } from './route-bodies.js';

const RUNS = fuzzRuns(30);
const BODY_LIMIT = 1024 * 1024;
const tally = new CaseTally('fuzz', 'gateway');

/** Plausible path parameter values, so a case fuzzing one part of a request reaches the code behind the rest. */
const PLAIN_PARAMS: Record<string, string> = {
  cell: DEFAULT_JOB_CELL,
  h3_cell: DEFAULT_JOB_CELL,
  zoom: '10',
  style: 'osm-bright',
  file: 'osm-bright.png',
  jobId: '00000000-0000-4000-8000-000000000000',
  record_id: 'no-such-record',
  tool_id: 'web-search',
  path: 'app.js',
};

const styleText = fc.oneof(
  fc.constantFrom(...TILE_STYLES, 'OSM-BRIGHT', 'neon', '', '..', ...PROTO_KEYS, 'toString'),
  fc.string({ maxLength: 12 }),
);

/** Hostile values per path parameter name; unknown names get a mix of everything. */
const PARAM_VALUES: Record<string, fc.Arbitrary<string>> = {
  cell: hostileCell,
  h3_cell: hostileCell,
  zoom: hostileZoom,
  style: styleText,
  file: fc
    .tuple(styleText, fc.constantFrom('png', 'jpg', 'webp', 'gif', 'PNG', '', 'png.png', 'png%00'))
    .map(([style, format]) => (format === '' ? style : `${style}.${format}`)),
  jobId: fc.oneof(
    fc.uuid(),
    fc.uuid().map((u) => u.toUpperCase()),
    fc.stringMatching(/^[0-9a-f-]{36}$/),
    fc.string({ maxLength: 80 }),
    fc.constant('x'.repeat(5000)),
  ),
  record_id: fc.oneof(fc.string({ maxLength: 80 }), fc.constantFrom('tile:0', '', 'x'.repeat(5000), ...PROTO_KEYS)),
  pk: hostilePublicKey,
  agent_pk: hostilePublicKey,
  tool_id: fc.oneof(
    fc.constantFrom(...TOOL_IDS, ...PROTO_KEYS, 'toString', 'hasOwnProperty', 'WEB-SEARCH'),
    fc.string({ maxLength: 20 }),
  ),
  path: fc.oneof(
    fc.constantFrom(
      '../../package.json',
      '..%2f..%2fpackage.json',
      '%2e%2e/%2e%2e/etc/passwd',
      'index.html',
      '.env',
      'a/b/c',
      '%00',
      '%',
      'x'.repeat(3000),
      '__proto__',
    ),
    fc.array(fc.string({ maxLength: 10 }), { maxLength: 4 }).map((parts) => parts.join('/')),
  ),
};
const anyParam = fc.oneof(hostileCell, hostileZoom, hostilePublicKey, fc.string({ maxLength: 30 }));

/** How a value goes on the wire: encoded, raw (bad `%` escapes kept), or encoded twice. */
type Encoding = 'encoded' | 'raw' | 'double';
const encodings = fc.constantFrom<Encoding>('encoded', 'encoded', 'raw', 'double');

/** Percent-encodes what Node's client refuses on a request line (and `?`, `#`), leaving `%` as given. */
function rawSafe(value: string): string {
  let out = '';
  for (const ch of value) {
    if (/^[\u0021-\u00ff]$/.test(ch) && ch !== '?' && ch !== '#') out += ch;
    else {
      try {
        out += encodeURIComponent(ch);
      } catch {
        out += '%ED%A0%80'; // a lone surrogate: its (invalid) UTF-8 form
      }
    }
  }
  return out;
}

function encode(value: string, how: Encoding, keepSlashes = false): string {
  const component = (v: string) => {
    try {
      const encoded = encodeURIComponent(v);
      return keepSlashes ? encoded.replace(/%2F/gi, '/') : encoded;
    } catch {
      return rawSafe(v);
    }
  };
  if (how === 'raw') return keepSlashes ? rawSafe(value) : rawSafe(value).replace(/\//g, '%2F');
  if (how === 'double') return component(component(value));
  return component(value);
}

/** The pattern with its parameters filled in (`values` are already encoded). */
const fillPath = (pattern: string, values: Record<string, string>): string =>
  pattern.replace(/[:*]([A-Za-z_][A-Za-z0-9_]*)/g, (_, name: string) => values[name] ?? 'x');

/** Query names routes read, plus ones that look dangerous to a naive parser. */
const QUERY_NAMES = [
  'cell',
  'from',
  'to',
  'cloud',
  'limit',
  'hours',
  'rings',
  'days',
  'epoch_start',
  'epoch_end',
  'collection',
  'cursor',
  'zoom',
  'sessionId',
];
const queryValue = (name: string): fc.Arbitrary<string> => {
  if (name === 'cell') return hostileCell;
  if (name === 'from' || name === 'to') return hostileDate;
  if (name === 'collection') return fc.constantFrom('inference', 'tile', 'imagery', 'nope', '', ...PROTO_KEYS);
  if (name === 'cursor') return fc.oneof(fc.string({ maxLength: 40 }), fc.constant('x'.repeat(600)));
  if (name === 'zoom') return hostileZoom;
  return hostileNumberText;
};

/** A query string: repeated, empty, valueless and prototype-named parameters, bad escapes, huge values. */
const queryString: fc.Arbitrary<string> = fc
  .array(
    fc.oneof(
      {
        weight: 5,
        arbitrary: fc.constantFrom(...QUERY_NAMES).chain((name) => fc.tuple(fc.constant(name), queryValue(name))),
      },
      fc.tuple(
        fc.constantFrom(...PROTO_KEYS, 'hasOwnProperty', 'toString', 'cell[]', 'cell[0]', 'a.b', ''),
        fc.string({ maxLength: 10 }),
      ),
      fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })),
    ),
    { maxLength: 6 },
  )
  .chain((pairs) =>
    fc.tuple(
      fc.constant(pairs),
      fc.array(encodings, { minLength: pairs.length, maxLength: pairs.length }),
      fc.constantFrom(
        '',
        '',
        '',
        '',
        '',
        '&&',
        '&=',
        '&novalue',
        `&limit=${'9'.repeat(10_000)}`,
        `&x=${'q'.repeat(20_000)}`,
      ),
    ),
  )
  .map(([pairs, how, tail]) => {
    const parts = pairs.map(
      ([name, value], i) => `${encode(name, how[i] ?? 'encoded')}=${encode(value, how[i] ?? 'encoded')}`,
    );
    return `?${parts.join('&')}${tail}`;
  });

const base64 = (value: string | Buffer) => Buffer.from(value).toString('base64');

/**
 * docs/protocol.md §7's 503 no_workers: the answer to a VALID job no worker can take (a tool, x-svc-jurisdiction or
 * x-svc-min-tier no worker offers). It is about capacity, not input, so it is allowed, and counted apart from 5xx;
 * the OpenAI-compatible routes carry the code in an OpenAI error object.
 */
function isNoWorkers(res: FuzzResponse): boolean {
  if (res.status !== 503) return false;
  try {
    const error = (JSON.parse(res.text) as { error?: unknown }).error;
    return error === 'no_workers' || (error as { code?: unknown } | null)?.code === 'no_workers';
  } catch {
    return false;
  }
}
/** openEO's FeatureUnsupported (501): the deliberate answer of an openEO endpoint not built (docs/protocol.md §16). */
function isFeatureUnsupported(res: FuzzResponse): boolean {
  if (res.status !== 501) return false;
  try {
    return (JSON.parse(res.text) as { code?: unknown }).code === 'FeatureUnsupported';
  } catch {
    return false;
  }
}
const allowed5xx = (res: FuzzResponse) => isNoWorkers(res) || isFeatureUnsupported(res);
/** The fuzz key as the route takes it: openEO routes read `Bearer basic//<key>` (docs/protocol.md §16.2). */
const bearerFor = (route: FuzzRoute) =>
  route.path.startsWith('/openeo/') ? `Bearer basic//${FUZZ_API_KEY}` : `Bearer ${FUZZ_API_KEY}`;
const HUMAN = generateKeyPair();

describe('fuzz: every gateway route answers hostile requests with a 4xx JSON error', function () {
  let fz: Awaited<ReturnType<typeof startFuzzGateway>>;
  let baseline: string;
  /** Certificates for the fuzz key: good, expired, narrow, rate-limited (built once the key exists). */
  let certs: string[] = [];

  before(async function () {
    this.timeout(60_000);
    fz = await startFuzzGateway();
    baseline = prototypeSnapshot();
    const cert = (overrides: Partial<Parameters<typeof issueCertificate>[1]>) =>
      base64(
        JSON.stringify(
          issueCertificate(HUMAN.secretKey, {
            agent_pk: fz.key.publicKey,
            h3_cells: ['831e80fffffffff'],
            facets: ['*'],
            not_before: '2026-02-01T00:00:00Z',
            not_after: '2026-04-01T00:00:00Z',
            max_depth: 0,
            ...overrides,
          }),
        ),
      );
    certs = [
      cert({}),
      cert({ not_after: '2026-02-02T00:00:00Z' }),
      cert({ facets: ['perception'], constraints: { allowed_tools: ['web-search'] } }),
      cert({ constraints: { max_ops_per_hour: 1 } }),
      cert({ h3_cells: ['8f2830828052d25'] }),
    ];
  });
  after(async () => {
    tally.print();
    await fz?.close();
  });

  const routes = () => fz.routes;
  const postRoutes = () => fz.routes.filter((r) => r.method === 'POST' || r.method === 'PUT');
  const plainPath = (route: FuzzRoute) =>
    fillPath(route.path, { ...PLAIN_PARAMS, pk: fz.key.publicKey, agent_pk: fz.key.publicKey });

  /** Sends one case and judges it; every case also checks Object.prototype is untouched. */
  async function hit(property: string, route: FuzzRoute, req: FuzzRequest): Promise<FuzzResponse> {
    let res: FuzzResponse;
    try {
      res = await send(fz.gw.url, req);
    } catch (error) {
      throw new Error(`${property} ${req.method} ${req.path.slice(0, 200)}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    const availability = allowed5xx(res);
    tally.add(property, familyOf(route.path), res.status, availability);
    assertCleanAnswer(res, `${property} ${req.method} ${req.path.slice(0, 200)}`, { allow5xx: allowed5xx });
    assert.equal(prototypeSnapshot(), baseline, `${property}: a prototype gained or lost a property`);
    assert.equal(
      ({} as Record<string, unknown>)[POLLUTION_MARKER],
      undefined,
      `${property}: Object.prototype polluted`,
    );
    return res;
  }

  /** The server still answers, after each route's cases. */
  async function alive(): Promise<void> {
    const res = await send(fz.gw.url, { method: 'GET', path: '/health' });
    assert.equal(res.status, 200, `the gateway stopped answering /health: ${res.status} ${res.text}`);
  }

  /** Runs `property` for every route in `list`, RUNS cases each. */
  async function everyRoute<T>(
    list: FuzzRoute[],
    arbitrary: (route: FuzzRoute) => fc.Arbitrary<T>,
    run: (route: FuzzRoute, value: T) => Promise<void>,
    runs = RUNS,
  ): Promise<void> {
    for (const route of list) {
      await fc.assert(
        fc.asyncProperty(arbitrary(route), (value) => run(route, value)),
        fcParams(runs),
      );
      await alive();
    }
  }

  const signed = (route: FuzzRoute, body: Record<string, unknown>) => {
    const { body: withSignature, signature } = signRequestBody(fz.key.secretKey, {
      ...body,
      requester_pk: fz.key.publicKey,
    });
    return { text: JSON.stringify(withSignature), signature, route };
  };

  it('fuzzes the routes the app router serves (a new route is fuzzed without editing this suite)', () => {
    const listed = routes().map((r) => `${r.method} ${r.path}`);
    for (const expected of [
      'POST /v1/compute',
      'GET /v1/tiles/:h3_cell/:zoom/:file',
      'GET /v1/imagery/ndvi',
      'POST /v1/chat/completions',
      'POST /store/sync',
      'GET /health',
    ]) {
      assert.ok(listed.includes(expected), `${expected} missing from ${listed.join(', ')}`);
    }
    assert.ok(listed.length >= 30, `only ${listed.length} routes found`);
  });

  it('raw bodies: malformed, non-UTF-8, deep, huge, duplicated or prototype keys, NaN/Infinity → 4xx JSON', async function () {
    this.timeout(timeoutFor(postRoutes().length * RUNS, 60));
    const raw = fc.oneof(
      invalidJsonText.map(sample),
      invalidUtf8.map(sample),
      deepJsonText.map(sample),
      trickyKeysText.map(sample),
      sizedJsonText(BODY_LIMIT).map(sample),
      numericEdgeText.map(sample),
      anyJson.map((v) => sample(JSON.stringify(v) ?? 'null')),
      fc.constantFrom('\ufeff{}', '').map(sample),
    );
    const contentType = fc.constantFrom(
      'application/json',
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=latin1',
      'application/vnd.api+json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      '',
    );
    await everyRoute(
      postRoutes(),
      () => fc.tuple(raw, contentType, fc.option(fc.constantFrom('ab'.repeat(64), 'zz', ''), { nil: undefined })),
      async (route, [body, type, signature]) => {
        await hit('raw-body', route, {
          method: route.method,
          path: plainPath(route),
          headers: {
            ...(type === '' ? {} : { 'content-type': type }),
            authorization: bearerFor(route),
            ...(signature === undefined ? {} : { 'x-idn-signature': signature }),
          },
          body: body.bytes,
        });
      },
    );
  });

  it('route-shaped bodies: valid bodies with one hostile field, signed or not, reach every pre-flight → 4xx JSON or success', async function () {
    this.timeout(timeoutFor(postRoutes().length * RUNS * 2, 80));
    await everyRoute(
      postRoutes(),
      (route) =>
        fc.tuple(
          bodyFor(route.path, fz.key, TEST_NOW),
          createdAt(TEST_NOW),
          fc.constantFrom('same', 'same', 'same', 'same', 'upper', 'other', 'padded', 'unsigned'),
          fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
        ),
      async (route, [fields, created, headerKind, nonce]) => {
        if (headerKind === 'unsigned') {
          // The body as an unsigned route reads it (a signed route answers 401 signature_required).
          await hit('signed-body', route, {
            method: route.method,
            path: plainPath(route),
            headers: { 'content-type': 'application/json', authorization: bearerFor(route) },
            body: JSON.stringify(fields),
          });
          return;
        }
        const body = {
          ...fields,
          ...(created === undefined ? {} : { created_at: created }),
          ...(nonce === undefined ? {} : { nonce }),
          ...(route.path === '/store/proof/:record_id' ? { record_id: PLAIN_PARAMS.record_id } : {}),
        };
        const { text, signature } = signed(route, body);
        const header =
          headerKind === 'upper'
            ? signature.toUpperCase()
            : headerKind === 'other'
              ? `${signature.slice(0, 127)}${signature.endsWith('0') ? '1' : '0'}`
              : headerKind === 'padded'
                ? ` ${signature} `
                : signature;
        await hit('signed-body', route, {
          method: route.method,
          path: plainPath(route),
          headers: {
            'content-type': 'application/json',
            'x-idn-signature': header,
            authorization: bearerFor(route),
          },
          body: text,
        });
      },
      RUNS * 2,
    );
  });

  it('query strings: repeated, empty, huge, non-numeric, negative, zoom −1/21, cloud > 100, dates out of range → 4xx JSON', async function () {
    this.timeout(timeoutFor(routes().length * RUNS, 40));
    await everyRoute(
      routes(),
      () => queryString,
      async (route, query) => {
        await hit('query', route, {
          method: route.method,
          path: `${plainPath(route)}${query}`,
          headers: { authorization: bearerFor(route), 'content-type': 'application/json' },
          ...(route.method === 'GET' ? {} : { body: '{}' }),
        });
      },
    );
  });

  it('path parameters: invalid and boundary H3 cells (pentagons, res 0/15, wrong resolution), zooms, keys, ids → 4xx JSON', async function () {
    const withParams = routes().filter((r) => r.params.length > 0);
    this.timeout(timeoutFor(withParams.length * RUNS * 2, 60));
    await everyRoute(
      withParams,
      (route) =>
        fc.tuple(
          fc.tuple(
            ...route.params.map((name) => fc.tuple(fc.constant(name), PARAM_VALUES[name] ?? anyParam, encodings)),
          ),
          fc.nat(route.params.length),
        ),
      async (route, [values, keepPlain]) => {
        // Sometimes one parameter stays plain, so each of the others is judged on its own.
        const filled = Object.fromEntries(
          values.map(([name, value, how], i) => [
            name,
            i === keepPlain ? encode(PLAIN_PARAMS[name] ?? 'x', 'encoded') : encode(value, how, name === 'path'),
          ]),
        );
        await hit('path', route, {
          method: route.method,
          path: fillPath(route.path, filled),
          headers: { authorization: bearerFor(route), 'content-type': 'application/json' },
          ...(route.method === 'GET' ? {} : { body: '{}' }),
        });
      },
      RUNS * 2,
    );
  });

  it('headers: bad X-Idn-Signature, bad delegation certificates (base64, JSON, chains), cells, tiers, keys, huge → 4xx JSON', async function () {
    this.timeout(timeoutFor(routes().length * RUNS * 2, 60));
    const delegation = fc.oneof(
      fc.constantFrom(...certs),
      fc.constantFrom('!!!', '====', 'a', 'ab=c', `${certs[0]}=`, 'e30', base64('[]'), base64('null'), base64('[1,2]')),
      fc.constant(certs[0]!.replace(/\+/g, '-').replace(/\//g, '_')),
      fc.constant(
        base64(
          JSON.stringify(Array.from({ length: 9 }, () => JSON.parse(Buffer.from(certs[0]!, 'base64').toString()))),
        ),
      ),
      invalidUtf8.map(base64),
      anyJson.map((v) => base64(JSON.stringify(v) ?? 'null')),
      deepJsonText.filter((t) => t.length < 9_000).map(base64),
      fc.constantFrom(`${'['.repeat(5000)}${']'.repeat(5000)}`).map(base64),
      headerText,
    );
    const headers = fc.record(
      {
        'x-idn-signature': fc.oneof(
          fc.stringMatching(/^[0-9a-f]{128}$/),
          fc.stringMatching(/^[0-9A-F]{128}$/),
          fc.stringMatching(/^[0-9a-f]{127}$/),
          headerText,
        ),
        'x-svc-delegation-cert': delegation,
        'x-svc-h3-cell': hostileCell.map((c) => c.replace(/[^\t\x20-\x7e]/g, '')),
        'x-svc-jurisdiction': fc.oneof(
          fc.constantFrom('EU', 'US', 'IT', 'DE', 'xx', 'eu', '', ...PROTO_KEYS),
          headerText,
        ),
        'x-svc-min-tier': fc.oneof(fc.constantFrom(...WORKER_TIERS, 'god', '', ...PROTO_KEYS, 'toString'), headerText),
        authorization: fc.oneof(
          fc.constantFrom(
            `Bearer ${FUZZ_API_KEY}`,
            `Bearer basic//${FUZZ_API_KEY}`,
            'Bearer',
            'Bearer ',
            'Basic YTpi',
            `bearer  ${FUZZ_API_KEY}`,
          ),
          headerText,
        ),
        'content-type': fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-16', ''),
        'x-request-id': headerText,
        'if-none-match': fc.oneof(fc.constantFrom('*', '"abc"', 'W/"x"', '""'), headerText),
        origin: fc.constantFrom('https://evil.example', 'null', 'http://localhost:1'),
      },
      { requiredKeys: [] },
    );
    // Past Node's 16 KiB header limit (431) only now and then, so most cases reach the gates.
    const padding = fc.oneof(
      { weight: 7, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.constantFrom('p'.repeat(12_000), 'p'.repeat(17_000)) },
    );
    await everyRoute(
      routes(),
      (route) =>
        fc.tuple(
          headers,
          route.method === 'GET' ? fc.constant(undefined) : bodyFor(route.path, fz.key, TEST_NOW),
          fc.boolean(),
          fc.boolean(),
          padding,
        ),
      async (route, [hdrs, fields, signBody, duplicate, pad]) => {
        const sent: Record<string, string | string[]> = { ...hdrs, ...(pad === undefined ? {} : { 'x-pad': pad }) };
        let body: string | undefined;
        if (fields !== undefined) {
          const { text, signature } = signed(route, { ...fields, created_at: new Date(TEST_NOW).toISOString() });
          body = text;
          if (signBody && hdrs['x-idn-signature'] === undefined) sent['x-idn-signature'] = signature;
        }
        // A header sent twice: Node joins most into one value, a few (content-type) it refuses as duplicates.
        if (duplicate && hdrs['x-idn-signature'] !== undefined)
          sent['x-idn-signature'] = [hdrs['x-idn-signature'], 'ab'.repeat(64)];
        if (sent['content-type'] === '') delete sent['content-type'];
        await hit('headers', route, {
          method: route.method,
          path: plainPath(route),
          headers: sent,
          ...(body === undefined ? {} : { body }),
        });
      },
      RUNS * 2,
    );
  });

  it('methods and paths: unserved methods → 405, unknown paths → 404, both as JSON', async function () {
    const patterns = [...new Set(routes().map((r) => r.path))];
    this.timeout(timeoutFor(patterns.length * RUNS, 30));
    const served = new Map(
      patterns.map((p) => [
        p,
        routes()
          .filter((r) => r.path === p)
          .map((r) => r.method),
      ]),
    );
    for (const pattern of patterns) {
      const route = routes().find((r) => r.path === pattern) as FuzzRoute;
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'PROPFIND', 'TRACE'),
          fc.constantFrom('', '/', '/extra', '//', '/..', '/%2e%2e', '.json', '%00'),
          async (method, suffix) => {
            const res = await hit('method', route, {
              method,
              path: `${plainPath(route)}${suffix}`,
              headers: { 'content-type': 'application/json', authorization: bearerFor(route) },
              ...(method === 'GET' || method === 'OPTIONS' || method === 'TRACE' ? {} : { body: '{}' }),
            });
            if (suffix === '' && !(served.get(pattern) ?? []).includes(method) && method !== 'OPTIONS') {
              // An openEO path answers a method of the openEO API it does not route as the API says: 501
              // FeatureUnsupported (docs/protocol.md §16.1).
              const openEoMethod =
                (pattern.startsWith('/openeo/') || pattern === '/.well-known/openeo') &&
                ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(method);
              assert.ok(
                [404, 405].includes(res.status) || (openEoMethod && res.status === 501),
                `${method} ${pattern}: ${res.status}`,
              );
            }
          },
        ),
        fcParams(RUNS),
      );
    }
    await alive();
  });

  it('malformed HTTP: bad request lines, header bytes, framing, CONNECT → a JSON 4xx, never a dropped connection', async function () {
    this.timeout(timeoutFor(RUNS * 10, 40));
    const target = fc.oneof(
      fc.constantFrom(
        '/health',
        '/v1/compute',
        '*',
        'http://evil.example/health',
        '//health',
        '/%',
        '/%00',
        '/\u00ff',
        '',
      ),
      fc.constant(`/health?${'a'.repeat(20_000)}`),
      fc.constantFrom(...['/v1/tiles/861e8050fffffff/10/osm-bright.png', '/store/query?limit=5']),
    );
    const method = fc.constantFrom('GET', 'POST', 'CONNECT', 'FOO', 'get', 'G ET', '', 'GET\u0000');
    const version = fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', '', 'HTTP/9');
    const junk = fc.constantFrom(
      '',
      'x-a: b\u0000c\r\n',
      'bad header: x\r\n',
      ' folded: x\r\n',
      'x-b: \u00ff\u00fe\r\n',
      'upgrade: websocket\r\nconnection: upgrade\r\n',
      'content-type: application/json\r\n',
    );
    // Framing headers with a body that completes the request as framed (an incomplete one would rightly wait).
    const framing = fc.constantFrom<[string, string]>(
      ['', ''],
      ['content-length: 2\r\n', '{}'],
      ['content-length: 7\r\n', '{"a":1}'],
      ['content-length: 3\r\n', '{"a'],
      ['content-length: -1\r\n', ''],
      ['content-length: 1, 2\r\n', ''],
      ['content-length: 2\r\ncontent-length: 3\r\n', '{}'],
      ['content-length: 99999999999999999999\r\n', ''],
      ['transfer-encoding: chunked\r\n', '2\r\n{}\r\n0\r\n\r\n'],
      ['transfer-encoding: chunked\r\n', 'zz\r\n{}\r\n0\r\n\r\n'],
      ['transfer-encoding: chunked\r\n', '2;ext=\u0000\r\n{}\r\n0\r\n\r\n'],
      ['transfer-encoding: chunked\r\ncontent-length: 3\r\n', '2\r\n{}\r\n0\r\n\r\n'],
      ['transfer-encoding: gzip, chunked\r\n', '2\r\n{}\r\n0\r\n\r\n'],
      ['transfer-encoding: gzip\r\n', '{}'],
      ['expect: 100-continue\r\ncontent-length: 2\r\n', '{}'],
    );
    const route: FuzzRoute = { method: 'ANY', path: '/(malformed HTTP)', params: [] };
    await fc.assert(
      fc.asyncProperty(method, target, version, junk, framing, async (m, t, v, x, [frame, b]) => {
        const head = `${m} ${t} ${v}\r\nhost: 127.0.0.1\r\n${x}${frame}connection: close\r\n\r\n`;
        const bytes = Buffer.from(`${head}${b}`, 'latin1');
        let res: FuzzResponse;
        try {
          res = await sendRaw(fz.gw.url, bytes);
        } catch (error) {
          throw new Error(`${JSON.stringify(bytes.toString('latin1').slice(0, 200))}: ${(error as Error).message}`, {
            cause: error,
          });
        }
        tally.add('malformed-http', route.path, res.status);
        assertCleanAnswer(res, `raw ${JSON.stringify(bytes.toString('latin1').slice(0, 120))}`);
      }),
      fcParams(RUNS * 10),
    );
    await alive();
  });

  describe('regressions found by this suite (each was a 500 or a dropped connection)', () => {
    const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
    const route = (method: string, path: string): FuzzRoute => ({ method, path, params: [] });

    // Since the strict body parser (core/strict-json.ts) these stop at 64 levels, before any deeper layer sees them.
    it('a validly signed body nesting 400,000 levels is 400 invalid_json, not a stack overflow', async () => {
      const signature = 'ab'.repeat(64);
      for (const path of ['/v1/compute', '/store/sync', '/svc/workers/register']) {
        const res = await hit('regression', route('POST', path), {
          method: 'POST',
          path,
          headers: { 'content-type': 'application/json', 'x-idn-signature': signature },
          body: `{"requester_pk":"${fz.key.publicKey}","signature":"${signature}","x":${deep(400_000)}}`,
        });
        assert.equal(res.status, 400, res.text.slice(0, 200));
        assert.match(res.text, /invalid_json.*nests deeper than 64 levels/);
      }
    });

    it('an h3_cell nesting 100,000 levels is 400 invalid_json with a short detail', async () => {
      for (const path of ['/v1/chat/completions', '/v1/imagery/process']) {
        const res = await hit('regression', route('POST', path), {
          method: 'POST',
          path,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${FUZZ_API_KEY}` },
          body: `{"h3_cell":${deep(100_000)}}`,
        });
        assert.equal(res.status, 400);
        // The OpenAI-compatible route answers in OpenAI's shape, with the same code.
        const { error } = JSON.parse(res.text) as { error: string | { code: string } };
        assert.equal(typeof error === 'string' ? error : error.code, 'invalid_json');
        assert.ok(res.text.length < 400, `the detail echoes the value: ${res.text.length} bytes`);
      }
    });

    it('a GeoJSON position or type nesting 100,000 levels is 400 invalid_json', async () => {
      const path = '/v1/imagery/process';
      for (const area of [
        `{"type":"Point","coordinates":[${deep(100_000)},1]}`,
        `{"type":"GeometryCollection","geometries":[{"type":${deep(100_000)}}]}`,
      ]) {
        const res = await hit('regression', route('POST', path), {
          method: 'POST',
          path,
          headers: { 'content-type': 'application/json' },
          body: `{"operation":"ndvi","h3_cell":"${DEFAULT_JOB_CELL}","area":${area}}`,
        });
        assert.equal(res.status, 400);
        assert.equal((JSON.parse(res.text) as { error: string }).error, 'invalid_json');
      }
    });

    it('CONNECT is answered 405 method_not_allowed as JSON, not dropped (api/client-errors.ts)', async () => {
      const res = await sendRaw(fz.gw.url, Buffer.from('CONNECT /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n'));
      tally.add('regression', '/(malformed HTTP)', res.status);
      assertCleanAnswer(res, 'CONNECT');
      assert.equal(res.status, 405);
      await alive();
    });
  });
});
