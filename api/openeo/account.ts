/**
 * openEO accounts (docs/protocol.md §16.2): `GET /credentials/basic` answers the API key given as the Basic
 * password as the access token, and `GET /me` describes the key. Both pass the `openeo` auth gate
 * (api/openeo/credentials.ts), so a wrong key is refused before the handler runs.
 */
import type { Context } from 'koa';
import { pass } from '../../core/check.js';
import type { RouteSpec } from '../route-spec.js';
import { BILLING, OPENEO_BASE, OPENEO_TAG, openEoRoute } from './discovery.js';
import { accessTokenSchema, meSchema } from './schemas.js';

/** The key the Basic header carried: the gate has already checked it (a Bearer basic// token is the same key). */
function presentedKey(ctx: Context): string {
  const header = ctx.get('authorization').trim();
  const basic = /^Basic\s+(\S+)$/i.exec(header)?.[1];
  if (basic !== undefined) {
    const decoded = Buffer.from(basic, 'base64').toString('utf8');
    return decoded.slice(decoded.indexOf(':') + 1);
  }
  return /^Bearer\s+basic\/\/(\S+)$/i.exec(header)?.[1] ?? '';
}

/** openEO user ids are `[\w\-.~]+`: a configured key's `env:0` becomes `env-0`. */
export const openEoUserId = (keyId: string) => keyId.replace(/[^\w\-.~]/g, '-');

export function accountRoutes(): RouteSpec<unknown>[] {
  return [
    openEoRoute({
      method: 'GET',
      path: `${OPENEO_BASE}/credentials/basic`,
      auth: 'openeo',
      facets: [],
      preflight: () => pass(undefined),
      handler: async (ctx) => {
        ctx.set('cache-control', 'no-store');
        ctx.body = { access_token: presentedKey(ctx) };
      },
      docs: {
        summary: 'openEO HTTP Basic authentication',
        description:
          'HTTP Basic with an API key (API_KEYS or `geofabric apikey create`) as the password; the user name is ' +
          'not checked. The access token is the key: send `Authorization: Bearer basic//<token>` afterwards.',
        tags: [OPENEO_TAG],
        security: 'openeo_basic',
        responses: { 200: { description: 'The access token', schema: accessTokenSchema } },
        openEoErrors: ['AuthenticationRequired', 'AuthenticationSchemeInvalid', 'CredentialsInvalid', 'TokenInvalid'],
      },
    }),
    openEoRoute({
      method: 'GET',
      path: `${OPENEO_BASE}/me`,
      auth: 'openeo',
      facets: [],
      preflight: () => pass(undefined),
      handler: async (ctx, _input, gates) => {
        const key = gates.apiKey!;
        ctx.body = {
          user_id: openEoUserId(key.id),
          name: key.name,
          default_plan: BILLING.default_plan,
          budget: null,
          links: [],
        };
      },
      docs: {
        summary: 'openEO account of the API key',
        description: 'The key id as `user_id`, its name, the plan; `budget` is null (no per-key balance).',
        tags: [OPENEO_TAG],
        responses: { 200: { description: 'The account', schema: meSchema } },
        openEoErrors: ['AuthenticationRequired', 'AuthenticationSchemeInvalid', 'TokenInvalid'],
      },
    }),
  ];
}
