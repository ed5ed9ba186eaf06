import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

const PROOF_STATUS = ['victory_locked', 'proven_local_mock', 'implementation_present', 'planned', 'blocked', 'not_claimed'];
const strings = { type: 'array', items: { type: 'string' } };

/** The evidence manifest of SPEC.md ("Evidence manifest"), as JSON Schema draft 2020-12. */
export const MANIFEST_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://hookline.dev/schemas/evidence-manifest.json',
  type: 'object',
  required: ['@context', '@type', 'schema_version', 'generated_at', 'product', 'repository', 'evidence_scope', 'proof_levels', 'capabilities', 'compliance_mappings', 'validation'],
  additionalProperties: false,
  properties: {
    '@context': {
      type: 'object',
      required: ['schema', 'xsd'],
      properties: { schema: { type: 'string', format: 'uri' }, xsd: { type: 'string', format: 'uri' } },
    },
    '@type': { type: 'array', items: { type: 'string' }, minItems: 1 },
    schema_version: { type: 'string', pattern: '^\\d+\\.\\d+\\.\\d+$' },
    generated_at: { type: 'string', format: 'date-time' },
    product: { type: 'string' },
    repository: { type: 'string', format: 'uri' },
    evidence_scope: { type: 'string', enum: ['local_mock_harness_only', 'sandbox_ci', 'staging', 'production'] },
    proof_levels: {
      type: 'object',
      propertyNames: { pattern: '^[a-z_]+$' },
      additionalProperties: {
        type: 'object',
        required: ['label', 'description', 'confidence'],
        properties: { label: { type: 'string' }, description: { type: 'string' }, confidence: { type: 'string', enum: ['none', 'low', 'medium', 'high', 'maximum'] } },
      },
    },
    capabilities: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'proof_id', 'name', 'description', 'proof_status', 'victory_locked', 'evidence_refs', 'validator_refs', 'integrity_ref', 'non_claims'],
        additionalProperties: false,
        properties: {
          id: { type: 'string' },
          proof_id: { type: 'string' },
          name: { type: 'string' },
          description: { type: 'string' },
          proof_status: { type: 'string', enum: PROOF_STATUS },
          victory_locked: { type: 'boolean' },
          evidence_refs: strings,
          validator_refs: strings,
          integrity_ref: { type: 'string' },
          non_claims: strings,
        },
        allOf: [
          // victory_locked is true exactly when proof_status is victory_locked.
          {
            if: { type: 'object', properties: { proof_status: { const: 'victory_locked' } } },
            then: { type: 'object', properties: { victory_locked: { const: true } } },
            else: { type: 'object', properties: { victory_locked: { const: false } } },
          },
          // A proven capability points at the evidence and the validators it rests on.
          {
            if: { type: 'object', properties: { proof_status: { enum: ['victory_locked', 'proven_local_mock'] } } },
            then: { type: 'object', properties: { evidence_refs: { type: 'array', minItems: 1 }, validator_refs: { type: 'array', minItems: 1 } } },
          },
        ],
      },
    },
    compliance_mappings: {
      type: 'object',
      required: ['ref', 'entries_count'],
      properties: { ref: { type: 'string', format: 'uri' }, entries_count: { type: 'integer', minimum: 0 } },
    },
    validation: {
      type: 'object',
      required: ['make_targets', 'validator_script'],
      properties: { make_targets: strings, validator_script: { type: 'string' } },
    },
    non_claims: strings,
  },
} as const;

const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats(ajv);
const validate = ajv.compile(MANIFEST_SCHEMA);

/** Validates a document against MANIFEST_SCHEMA; errors as `path message` lines. */
export function validateManifest(doc: unknown): { valid: boolean; errors: string[] } {
  const valid = validate(doc);
  return { valid, errors: (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`) };
}
