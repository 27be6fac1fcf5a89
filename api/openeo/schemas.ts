/**
 * Answer bodies of the openEO routes for the gateway's API reference (`/openapi.json`). They name the fields
 * this back-end writes; the openEO API 1.2.0 document (test/fixtures/openeo/api-1.2.0/openapi.yaml) is the
 * contract, and test/api/openeo-discovery.test.ts validates the real answers against it.
 */
import { z } from 'zod';

const link = z.looseObject({
  href: z.string(),
  rel: z.string(),
  type: z.string().optional(),
  title: z.string().optional(),
});

export const openEoErrorSchema = z
  .object({
    id: z.string().describe('The request id (X-Request-Id), to quote when asking about the error'),
    code: z.string().describe("openEO's code (errors.json, or a process exception); else one of core/errors.ts"),
    message: z.string(),
    links: z.array(link),
  })
  .describe("Error body of the openEO routes (openEO's shape).");

export const wellKnownSchema = z.object({
  versions: z.array(z.object({ url: z.string(), production: z.boolean(), api_version: z.string() })),
});

export const capabilitiesSchema = z.looseObject({
  api_version: z.literal('1.2.0'),
  backend_version: z.string(),
  stac_version: z.string(),
  type: z.literal('Catalog'),
  id: z.string(),
  title: z.string(),
  description: z.string(),
  production: z.boolean(),
  conformsTo: z.array(z.string()),
  endpoints: z.array(z.object({ path: z.string(), methods: z.array(z.string()) })),
  billing: z.looseObject({ currency: z.string() }),
  links: z.array(link),
});

export const conformanceSchema = z.object({ conformsTo: z.array(z.string()) });
export const fileFormatsSchema = z.object({
  input: z.record(z.string(), z.looseObject({})),
  output: z.record(z.string(), z.looseObject({})),
});
export const collectionSchema = z.looseObject({ id: z.string(), stac_version: z.string(), extent: z.looseObject({}) });
export const collectionsSchema = z.object({ collections: z.array(collectionSchema), links: z.array(link) });
export const processesSchema = z.object({
  processes: z.array(z.looseObject({ id: z.string() })),
  links: z.array(link),
});
export const emptyObjectSchema = z.object({}).describe('None offered');
export const accessTokenSchema = z.object({ access_token: z.string().describe('Send as `Bearer basic//<token>`') });
export const meSchema = z.object({
  user_id: z.string(),
  name: z.string(),
  default_plan: z.string(),
  budget: z.null().describe('No per-key credit balance: a request is bounded by its own `budget`'),
  links: z.array(link),
});
