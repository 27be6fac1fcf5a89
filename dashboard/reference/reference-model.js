// @ts-check
/**
 * The API reference page's view model: the gateway's OpenAPI 3.1 document (`/openapi.json`)
 * turned into tags → operations → readable schema trees. Pure: no DOM, no fetch, so it is tested in Node
 * (test/dashboard/reference-model.test.ts) and reference.js only draws what this returns.
 */

/**
 * @typedef {Record<string, any>} Json
 *
 * @typedef {object} SchemaNode
 * @property {string} name       property name, `[]` for array items, `` for the root
 * @property {string} type       `object`, `string`, `array of integer`, `one of`, `Seal` (a named schema) …
 * @property {boolean} required
 * @property {boolean} nullable
 * @property {string} description
 * @property {string[]} facts   constraints and defaults, readable: `min 1`, `default 0.1`, `one of: a, b`
 * @property {string | null} ref the component name when the schema is a named one
 * @property {SchemaNode[]} children
 *
 * @typedef {{ name: string, in: string, required: boolean, description: string, schema: SchemaNode }} ParameterView
 * @typedef {{ status: string, description: string, contentTypes: string[], schema: SchemaNode | null,
 *   headers: { name: string, description: string }[], errorCodes: string[] }} ResponseView
 * @typedef {{ id: string, method: string, path: string, summary: string, description: string,
 *   security: string, parameters: ParameterView[], body: { contentTypes: string[], schema: SchemaNode } | null,
 *   responses: ResponseView[], errorCodes: { status: string, codes: string[] }[] }} OperationView
 * @typedef {{ name: string, description: string, operations: OperationView[] }} TagView
 * @typedef {{ title: string, version: string, description: string, servers: string[], tags: TagView[],
 *   errors: { code: string, statuses: string[] }[], operationCount: number }} ReferenceModel
 */

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options', 'trace'];
/** Deeper than any schema of the gateway; a guard against cycles the `seen` set does not catch. */
const MAX_DEPTH = 12;

/** @param {Json} doc @param {string} ref */
export function resolveRef(doc, ref) {
  if (!ref.startsWith('#/')) return undefined;
  /** @type {any} */
  let node = doc;
  for (const part of ref.slice(2).split('/')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = node[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return node;
}

/** @param {string} ref */
const refName = (ref) => ref.slice(ref.lastIndexOf('/') + 1);

/** @param {unknown} value */
const show = (value) => (typeof value === 'string' ? value : JSON.stringify(value));

/** Readable constraints of one schema (its own keywords only). @param {Json} s */
function factsOf(s) {
  /** @type {string[]} */
  const facts = [];
  if (s.const !== undefined) facts.push(`always ${show(s.const)}`);
  if (Array.isArray(s.enum)) facts.push(`one of: ${s.enum.map(show).join(', ')}`);
  if (typeof s.format === 'string') facts.push(`format ${s.format}`);
  if (typeof s.pattern === 'string' && s.format === undefined) facts.push(`pattern ${s.pattern}`);
  for (const [key, label] of [
    ['minimum', 'min'],
    ['exclusiveMinimum', 'more than'],
    ['maximum', 'max'],
    ['exclusiveMaximum', 'less than'],
    ['minLength', 'min length'],
    ['maxLength', 'max length'],
    ['minItems', 'min items'],
    ['maxItems', 'max items'],
  ]) {
    const value = s[/** @type {string} */ (key)];
    // Zod states integers' safe range; it says nothing a reader needs.
    if (typeof value === 'number' && Math.abs(value) !== Number.MAX_SAFE_INTEGER) facts.push(`${label} ${value}`);
  }
  if (s.default !== undefined) facts.push(`default ${show(s.default)}`);
  if (Array.isArray(s.examples) && s.examples.length > 0) facts.push(`e.g. ${s.examples.map(show).join(', ')}`);
  if (s.additionalProperties === false) facts.push('no other fields');
  return facts;
}

/**
 * A schema as a tree a person can read: named schemas are shown once per branch (a repeat is a leaf naming
 * it), `$ref` siblings refine the named schema, `null` alternatives become `nullable`.
 * @param {Json} doc @param {unknown} schema @param {string} [name] @param {boolean} [required]
 * @returns {SchemaNode}
 */
export function schemaTree(doc, schema, name = '', required = false) {
  return node(doc, schema, name, required, new Set(), 0);
}

/**
 * @param {Json} doc @param {unknown} raw @param {string} name @param {boolean} required
 * @param {Set<string>} seen @param {number} depth
 * @returns {SchemaNode}
 */
function node(doc, raw, name, required, seen, depth) {
  /** @type {SchemaNode} */
  const out = { name, type: 'any', required, nullable: false, description: '', facts: [], ref: null, children: [] };
  if (raw === true || raw === undefined || raw === null || typeof raw !== 'object') return out;
  /** @type {Json} */
  let s = /** @type {Json} */ (raw);
  if (typeof s.$ref === 'string') {
    const target = resolveRef(doc, s.$ref);
    out.ref = refName(s.$ref);
    const { $ref: _ref, ...siblings } = s;
    if (seen.has(s.$ref) || depth >= MAX_DEPTH || target === undefined) {
      out.type = out.ref;
      out.description = typeof siblings.description === 'string' ? siblings.description : '';
      return out;
    }
    seen = new Set([...seen, s.$ref]);
    // Siblings refine the target (an error response narrows `error` to its codes).
    s = mergeSchemas(/** @type {Json} */ (target), siblings);
  }
  out.description = typeof s.description === 'string' ? s.description : '';
  out.facts = factsOf(s);

  const variants = /** @type {unknown[] | undefined} */ (s.anyOf ?? s.oneOf);
  if (Array.isArray(variants)) {
    const nonNull = variants.filter((v) => !(v && typeof v === 'object' && /** @type {Json} */ (v).type === 'null'));
    out.nullable = nonNull.length < variants.length;
    if (nonNull.length === 1) {
      const only = node(doc, nonNull[0], name, required, seen, depth + 1);
      return {
        ...only,
        nullable: true,
        description: only.description || out.description,
        facts: [...out.facts, ...only.facts],
      };
    }
    out.type = 'one of';
    // A union discriminated on `type` (a compute step) names each option by its type.
    out.children = nonNull.map((v, i) => {
      const tag = /** @type {Json | undefined} */ (/** @type {Json} */ (v)?.properties)?.type;
      const name = tag && typeof tag === 'object' && typeof tag.const === 'string' ? tag.const : `option ${i + 1}`;
      return node(doc, v, name, false, seen, depth + 1);
    });
    return out;
  }
  if (Array.isArray(s.allOf)) {
    out.type = 'all of';
    out.children = s.allOf.map((v, i) => node(doc, v, `part ${i + 1}`, false, seen, depth + 1));
    return out;
  }

  let type = s.type;
  if (Array.isArray(type)) {
    out.nullable = type.includes('null');
    type = type.filter((t) => t !== 'null').join(' or ');
  }
  if (type === 'array' || (type === undefined && s.items !== undefined)) {
    const items = node(doc, s.items, '[]', false, seen, depth + 1);
    out.type = `array of ${items.ref ?? items.type}`;
    // Leaf items need no row of their own: the type says it, their facts join the array's.
    if (items.children.length === 0) {
      out.facts = [...out.facts, ...items.facts];
      if (!out.description) out.description = items.description;
    } else out.children = [items];
    return out;
  }
  if (type === 'object' || (type === undefined && s.properties !== undefined)) {
    out.type = 'object';
    const properties = /** @type {Json} */ (s.properties ?? {});
    const needed = new Set(Array.isArray(s.required) ? s.required : []);
    out.children = Object.entries(properties).map(([key, value]) =>
      node(doc, value, key, needed.has(key), seen, depth + 1),
    );
    if (s.additionalProperties && typeof s.additionalProperties === 'object') {
      const values = node(doc, s.additionalProperties, '{key}', false, seen, depth + 1);
      if (out.children.length === 0 && values.children.length === 0 && values.type !== 'any') {
        out.type = `map of ${values.ref ?? values.type}`;
      } else if (values.type !== 'any' || values.children.length > 0) out.children.push(values);
    }
    return out;
  }
  if (typeof type === 'string') out.type = type;
  else if (s.const !== undefined) out.type = typeof s.const;
  else if (Array.isArray(s.enum)) out.type = typeof s.enum[0];
  if (out.ref !== null && out.type === 'any') out.type = out.ref;
  return out;
}

/** The target with sibling keywords laid over it; `properties` merged one level deep. @param {Json} target @param {Json} over */
function mergeSchemas(target, over) {
  const merged = { ...target, ...over };
  if (target.properties && over.properties) {
    /** @type {Json} */
    const properties = { ...target.properties };
    for (const [key, value] of Object.entries(/** @type {Json} */ (over.properties))) {
      properties[key] = { ...(properties[key] ?? {}), ...value };
    }
    merged.properties = properties;
  }
  return merged;
}

/** @param {Json} doc @param {unknown} maybeRef */
const deref = (doc, maybeRef) => {
  const value = /** @type {Json} */ (maybeRef ?? {});
  return typeof value.$ref === 'string' ? /** @type {Json} */ (resolveRef(doc, value.$ref) ?? {}) : value;
};

/** @param {Json} doc @param {Json[]} requirements */
function securityOf(doc, requirements) {
  if (!Array.isArray(requirements) || requirements.length === 0) return 'none (public)';
  const schemes = /** @type {Json} */ (doc.components?.securitySchemes ?? {});
  return requirements
    .flatMap((r) => Object.keys(r))
    .map((key) => {
      const scheme = /** @type {Json} */ (schemes[key] ?? {});
      if (scheme.type === 'apiKey') return `signed: ${scheme.name} header (${key})`;
      if (scheme.type === 'http') return `${scheme.scheme} token: Authorization header (${key})`;
      return key;
    })
    .join(' or ');
}

/** @param {Json} doc @param {Json} op @param {string} method @param {string} path @returns {OperationView} */
function operationView(doc, op, method, path) {
  const parameters = (Array.isArray(op.parameters) ? op.parameters : []).map((p) => {
    const param = deref(doc, p);
    return {
      name: String(param.name ?? ''),
      in: String(param.in ?? ''),
      required: param.required === true,
      description: typeof param.description === 'string' ? param.description : '',
      schema: schemaTree(doc, param.schema, String(param.name ?? ''), param.required === true),
    };
  });
  const bodyContent = /** @type {Json | undefined} */ (deref(doc, op.requestBody).content);
  const bodyTypes = Object.keys(bodyContent ?? {});
  const body =
    bodyTypes.length === 0
      ? null
      : {
          contentTypes: bodyTypes,
          schema: schemaTree(doc, /** @type {Json} */ (bodyContent?.[bodyTypes[0] ?? ''] ?? {}).schema, '', true),
        };
  /** @type {ResponseView[]} */
  const responses = Object.entries(/** @type {Json} */ (op.responses ?? {})).map(([status, raw]) => {
    const response = deref(doc, raw);
    const content = /** @type {Json} */ (response.content ?? {});
    const types = Object.keys(content);
    const json = types.find((t) => t === 'application/json' || t.endsWith('+json'));
    const schema = json === undefined ? undefined : /** @type {Json} */ (content[json]).schema;
    return {
      status,
      description: typeof response.description === 'string' ? response.description : '',
      contentTypes: types,
      schema: schema === undefined ? null : schemaTree(doc, schema),
      headers: Object.entries(/** @type {Json} */ (response.headers ?? {})).map(([name, header]) => ({
        name,
        description: typeof header?.description === 'string' ? header.description : '',
      })),
      errorCodes: Array.isArray(response['x-error-codes']) ? response['x-error-codes'].map(String) : [],
    };
  });
  return {
    id: String(op.operationId ?? `${method}-${path}`),
    method: method.toUpperCase(),
    path,
    summary: typeof op.summary === 'string' ? op.summary : '',
    description: typeof op.description === 'string' ? op.description : '',
    security: securityOf(doc, op.security),
    parameters,
    body,
    responses,
    errorCodes: responses
      .filter((r) => r.errorCodes.length > 0)
      .map((r) => ({ status: r.status, codes: r.errorCodes })),
  };
}

/**
 * The whole page: tags in the document's order (operations under each of their tags; untagged ones under
 * `Other`), operations in path order, and the error codes the document lists, each with its statuses.
 * @param {Json} doc
 * @returns {ReferenceModel}
 */
export function buildReferenceModel(doc) {
  if (!doc || typeof doc !== 'object' || typeof doc.openapi !== 'string' || !doc.openapi.startsWith('3.1')) {
    throw new TypeError('not an OpenAPI 3.1 document');
  }
  /** @type {Map<string, TagView>} */
  const tags = new Map();
  for (const tag of Array.isArray(doc.tags) ? doc.tags : []) {
    tags.set(String(tag.name), { name: String(tag.name), description: String(tag.description ?? ''), operations: [] });
  }
  /** @type {Map<string, Set<string>>} */
  const errors = new Map();
  let operationCount = 0;
  for (const [path, item] of Object.entries(/** @type {Json} */ (doc.paths ?? {}))) {
    for (const method of METHODS) {
      const op = /** @type {Json | undefined} */ (item?.[method]);
      if (!op) continue;
      operationCount += 1;
      const view = operationView(doc, op, method, path);
      for (const { status, codes } of view.errorCodes) {
        for (const code of codes) errors.set(code, (errors.get(code) ?? new Set()).add(status));
      }
      const names = Array.isArray(op.tags) && op.tags.length > 0 ? op.tags.map(String) : ['Other'];
      for (const name of names) {
        if (!tags.has(name)) tags.set(name, { name, description: '', operations: [] });
        tags.get(name)?.operations.push(view);
      }
    }
  }
  return {
    title: String(doc.info?.title ?? 'API reference'),
    version: String(doc.info?.version ?? ''),
    description: String(doc.info?.description ?? ''),
    servers: (Array.isArray(doc.servers) ? doc.servers : []).map((s) => String(s.url)),
    tags: [...tags.values()].filter((t) => t.operations.length > 0),
    errors: [...errors]
      .map(([code, statuses]) => ({ code, statuses: [...statuses].sort() }))
      .sort((a, b) => (a.statuses[0] ?? '').localeCompare(b.statuses[0] ?? '') || a.code.localeCompare(b.code)),
    operationCount,
  };
}

/**
 * Operations whose method, path, summary, id or tag contain every word of `query` (case-insensitive); tags
 * left empty are dropped. An empty query keeps everything.
 * @param {ReferenceModel} model @param {string} query
 * @returns {ReferenceModel}
 */
export function filterModel(model, query) {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return model;
  const tags = model.tags
    .map((tag) => ({
      ...tag,
      operations: tag.operations.filter((op) => {
        const text = `${op.method} ${op.path} ${op.summary} ${op.id} ${tag.name}`.toLowerCase();
        return words.every((w) => text.includes(w));
      }),
    }))
    .filter((tag) => tag.operations.length > 0);
  return { ...model, tags };
}
