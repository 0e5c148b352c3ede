// Strict validation of real responses against the OpenAPI 3.0 documents the server serves.
// Schemas are compiled by Ajv in strict mode (unknown keywords and formats are errors; nullable
// needs a type), with the formats OpenAPI 3.0 defines and the JSON Schema ones the documents use.
import Ajv from 'ajv';
import addFormats from 'ajv-formats';

const isInt = (min, max) => ({ type: 'number', validate: (n) => Number.isInteger(n) && n >= min && n <= max });

export function strictAjv() {
  const ajv = new Ajv({
    strict: true,
    allErrors: true,
    formats: {
      // OpenAPI 3.0 data types (section 4.7.4)
      int32: isInt(-(2 ** 31), 2 ** 31 - 1),
      int64: isInt(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
      float: { type: 'number', validate: () => true },
      double: { type: 'number', validate: () => true },
      byte: /^[A-Za-z0-9+/]*={0,2}$/,
      binary: true,
      password: true,
    },
  });
  addFormats(ajv, ['date-time', 'date', 'email', 'uuid', 'uri']);
  // OpenAPI's annotations that JSON Schema draft-07 does not know.
  ajv.addVocabulary(['example', 'xml', 'externalDocs']);
  return ajv;
}

// Compiles a response schema of `doc`: its #/components/schemas refs are resolved against the
// document's components, added once per document under a base URI.
export class DocValidator {
  constructor(name, doc) {
    this.name = name;
    this.doc = doc;
    this.ajv = strictAjv();
    this.base = `https://sika.test/${name}`;
    this.cache = new Map();
    const schemas = doc.components?.schemas || {};
    for (const [key, schema] of Object.entries(schemas))
      this.ajv.addSchema(this.rewrite(schema), `${this.base}/schemas/${key}`);
  }

  rewrite(schema) {
    if (Array.isArray(schema)) return schema.map((s) => this.rewrite(s));
    if (!schema || typeof schema !== 'object') return schema;
    const out = {};
    // OpenAPI 3.0's boolean exclusiveMinimum/exclusiveMaximum qualify minimum/maximum.
    if (typeof schema.exclusiveMinimum === 'boolean' || typeof schema.exclusiveMaximum === 'boolean') {
      schema = { ...schema };
      for (const [ex, bound] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']]) {
        if (typeof schema[ex] !== 'boolean') continue;
        if (schema[ex]) {
          if (typeof schema[bound] !== 'number') throw new Error(`${ex}: true without ${bound}`);
          schema[ex] = schema[bound];
          delete schema[bound];
        } else delete schema[ex];
      }
    }
    for (const [k, v] of Object.entries(schema)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/'))
        out.$ref = `${this.base}/schemas/${v.slice('#/components/schemas/'.length)}`;
      else out[k] = this.rewrite(v);
    }
    return out;
  }

  // The operation object of a documented method and path template, or undefined.
  operation(method, template) {
    return this.doc.paths?.[template]?.[method.toLowerCase()];
  }

  // Resolves a response object that is a $ref to #/components/responses.
  response(op, status) {
    let r = op.responses?.[String(status)] ?? op.responses?.default;
    if (r?.$ref) r = this.doc.components.responses[r.$ref.slice('#/components/responses/'.length)];
    return r;
  }

  compile(schema) {
    const key = JSON.stringify(schema);
    let v = this.cache.get(key);
    if (!v) {
      v = this.ajv.compile(this.rewrite(schema));
      this.cache.set(key, v);
    }
    return v;
  }

  // Compiles every schema of every response of every operation (strict mode refuses a bad one).
  compileAll() {
    for (const [path, item] of Object.entries(this.doc.paths || {}))
      for (const [method, op] of Object.entries(item)) {
        if (!op || typeof op !== 'object' || !op.responses) continue;
        for (const status of Object.keys(op.responses)) {
          const r = this.response(op, status);
          for (const [type, media] of Object.entries(r?.content || {}))
            if (media.schema) {
              try {
                this.compile(media.schema);
              } catch (e) {
                throw new Error(`${this.name} ${method} ${path} ${status} ${type}: ${e.message}`);
              }
            }
        }
      }
  }
}
