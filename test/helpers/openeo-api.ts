/**
 * The openEO API 1.2.0 document (test/fixtures/openeo/api-1.2.0/openapi.yaml, OpenAPI 3.0) as a validator of real
 * answers: `validate('/collections', 'get', 200, body)` checks a body against that operation's response schema.
 * Ajv 6 reads OpenAPI 3.0's `nullable`; formats it does not know (commonmark) are ignored.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import { load } from 'js-yaml';

const here = dirname(fileURLToPath(import.meta.url));
const FIXTURE = join(here, '..', 'fixtures', 'openeo', 'api-1.2.0');

let ajv: Ajv.Ajv | undefined;
function validator(): Ajv.Ajv {
  if (!ajv) {
    const doc = load(readFileSync(join(FIXTURE, 'openapi.yaml'), 'utf8')) as {
      components: { schemas: Record<string, Record<string, unknown>> };
    };
    // Two `oneOf`s of the document have overlapping branches, which strict JSON Schema `oneOf` refuses: the
    // process data type (`Generic` accepts any schema, so a `process-graph` or `datacube` one matches twice: no
    // official process definition passes) and a collection summary (a `{ minimum, maximum }` range is also a JSON
    // Schema: the document's own example fails). Both are read as `anyOf`, which is what their titles mean.
    const schemas = doc.components.schemas as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    for (const node of [schemas.process_json_schema, schemas.collection.properties.summaries.additionalProperties]) {
      node.anyOf = node.oneOf;
      delete node.oneOf;
    }
    ajv = new Ajv({ nullable: true, unknownFormats: 'ignore', allErrors: true, logger: false });
    ajv.addSchema(doc, 'openeo');
  }
  return ajv;
}

const pointer = (part: string) => part.replace(/~/g, '~0').replace(/\//g, '~1');

/** The errors of `body` against the documented answer of `method path` with `status` (empty: valid). */
export function openEoSchemaErrors(path: string, method: string, status: number | string, body: unknown): string[] {
  const ref = `openeo#/paths/${pointer(path)}/${method}/responses/${status}/content/application~1json/schema`;
  const validate = validator().compile({ $ref: ref });
  return validate(body)
    ? []
    : (validate.errors ?? []).map((e) => `${e.dataPath || '(root)'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
}

/** The errors of an error body against the API's `error` schema. */
export function openEoErrorSchemaErrors(body: unknown): string[] {
  const validate = validator().compile({ $ref: 'openeo#/components/schemas/error' });
  return validate(body) ? [] : (validate.errors ?? []).map((e) => `${e.dataPath} ${e.message ?? ''}`);
}

/** errors.json: the standard codes and their HTTP status. */
export const OPENEO_ERRORS = JSON.parse(readFileSync(join(FIXTURE, 'errors.json'), 'utf8')) as Record<
  string,
  { http: number; message: string }
>;
