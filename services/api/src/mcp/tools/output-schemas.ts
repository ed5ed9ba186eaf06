import * as z from 'zod';

const nullableString = z.string().nullable();
const nullableInt = z.number().int().nullable();

export const capabilitySchema = z.object({
  id: z.string(),
  proof_id: z.string(),
  name: z.string(),
  description: z.string(),
  proof_status: z.enum(['victory_locked', 'proven_local_mock', 'implementation_present', 'planned', 'blocked', 'not_claimed']),
  victory_locked: z.boolean(),
  evidence_refs: z.array(z.string()),
  validator_refs: z.array(z.string()),
  integrity_ref: z.string(),
  non_claims: z.array(z.string()),
});

export const proofSchema = z.object({
  proof_id: z.string(),
  capability_id: z.string(),
  name: z.string(),
  proof_status: capabilitySchema.shape.proof_status,
  evidence_refs: z.array(z.string()),
  missing: z.array(z.string()).describe('Named tests or files not found, when not proven'),
  integrity_ref: z.string(),
});

export const rootSchema = z.object({
  v: z.literal(1),
  id: z.string(),
  tenant_id: z.string(),
  window_start: z.string(),
  window_end: z.string(),
  root_hash: z.string(),
  leaf_count: z.number().int(),
  created_at: z.string(),
  key_id: z.string(),
  signature: z.string(),
});

export const receiptSchema = z.object({
  v: z.literal(1),
  id: z.string(),
  tenant_id: z.string(),
  attempt_id: z.string(),
  delivery_id: z.string(),
  event_id: z.string(),
  destination_id: z.string(),
  destination_origin: nullableString,
  attempt_number: z.number().int(),
  outcome: z.enum(['succeeded', 'failed']),
  status_code: nullableInt,
  error_kind: nullableString,
  started_at: z.string(),
  completed_at: z.string(),
  duration_ms: z.number().int(),
  request_body_sha256: nullableString,
  response_body_sha256: nullableString,
  issued_at: z.string(),
  key_id: z.string(),
  signature: z.string(),
});

export const bundleSchema = z.object({
  receipt: receiptSchema,
  proof: z.object({ root_id: z.string(), leaf_index: z.number().int(), tree_size: z.number().int(), leaf_hash: z.string(), audit_path: z.array(z.string()) }).nullable(),
  root: rootSchema.nullable(),
});

export const deliverySchema = z.object({
  id: z.string(),
  event_id: z.string(),
  destination_id: z.string(),
  flow_id: z.string(),
  status: z.enum(['pending', 'delivering', 'delivered', 'failed', 'exhausted', 'replaying']),
  attempt_count: z.number().int(),
  replay_count: z.number().int(),
  last_status_code: nullableInt,
  last_error: nullableString,
  next_attempt_at: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  delivered_at: nullableString,
  exhausted_at: nullableString,
});

export const checkSchema = z.looseObject({ ok: z.boolean(), error: z.string().optional() });

export const logEntrySchema = z.object({
  at: z.string(),
  level: z.enum(['info', 'warn', 'error']),
  source: z.enum(['event', 'delivery_attempt', 'ingest_rejection', 'audit']),
  message: z.string(),
  data: z.record(z.string(), z.unknown()),
});

export const planeSchema = z.looseObject({
  id: z.string(),
  kind: z.enum(['control_plane', 'data_plane', 'edge_cluster']),
  name: z.string(),
  status: z.string(),
  connected: z.boolean().optional().describe('edge clusters: an agent contacted the service within EDGE_CONNECTED_WINDOW_MS (as in the cluster views)'),
  in_flight: z.number().int().optional().describe('edge clusters: deliveries leased to its agents, not reported yet'),
});

export const healthSchema = z.object({
  status: z.enum(['ok', 'degraded']),
  service: z.string(),
  version: z.string(),
  commit: nullableString,
  time: z.string(),
  checks: z.object({ database: checkSchema, redis: checkSchema }),
});
