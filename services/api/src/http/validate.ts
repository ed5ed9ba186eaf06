import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { AppError, type FieldError } from '@hookline/errors';

/** A JSON Schema object (the same objects feed ajv and the OpenAPI document). */
export type JsonSchema = Record<string, unknown>;

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const compiled = new WeakMap<JsonSchema, ValidateFunction>();

function fieldOf(e: ErrorObject): string {
  const path = e.instancePath.split('/').slice(1).join('.');
  const extra =
    e.keyword === 'required' ? String(e.params['missingProperty']) : e.keyword === 'additionalProperties' ? String(e.params['additionalProperty']) : '';
  return [path, extra].filter(Boolean).join('.') || 'body';
}

function messageOf(e: ErrorObject): string {
  if (e.keyword === 'required') return 'is required';
  if (e.keyword === 'additionalProperties') return 'is not a known field';
  if (e.keyword === 'enum') return `must be one of: ${(e.params['allowedValues'] as unknown[]).join(', ')}`;
  return e.message ?? 'is invalid';
}

/** Field errors for `value` against `schema`; empty when it is valid. */
export function schemaErrors(schema: JsonSchema, value: unknown): FieldError[] {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  if (validate(value)) return [];
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of validate.errors ?? []) {
    // anyOf/oneOf branches repeat themselves; one message per field is enough.
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') continue;
    const fe = { field: fieldOf(e), message: messageOf(e) };
    const k = `${fe.field}|${fe.message}`;
    if (!seen.has(k)) {
      seen.add(k);
      out.push(fe);
    }
  }
  return out;
}

/** Throws a 400 validation-error naming every bad field. */
export function assertValid(schema: JsonSchema, value: unknown): void {
  const errors = schemaErrors(schema, value);
  if (errors.length) throw AppError.validation(errors);
}
