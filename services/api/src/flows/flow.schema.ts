import type { JsonSchema } from '../http/validate';

const ref = { type: 'string', minLength: 1, maxLength: 64 };

const fields = {
  name: { type: 'string', minLength: 1, maxLength: 200 },
  endpoint: { ...ref, description: 'Ingester id (SPEC name)' },
  ingester_id: { ...ref, description: 'Alias of endpoint' },
  target: { ...ref, description: 'Destination id (SPEC name)' },
  destination_id: { ...ref, description: 'Alias of target' },
  filter: {
    type: 'object',
    description: 'Optional rules: { event_types?: string[], jsonpath?: string | string[], match?: operator tree }; {} matches every event',
  },
};

export const createFlowBody: JsonSchema = {
  type: 'object',
  required: ['name'],
  properties: { ...fields, state: { type: 'string', enum: ['DRAFT', 'ACTIVE'], description: 'Default ACTIVE; DRAFT waits for apply' } },
  additionalProperties: false,
};

/** PUT replaces name, references and filter (state changes go through apply/disable/enable). */
export const updateFlowBody: JsonSchema = { type: 'object', required: ['name'], properties: fields, additionalProperties: false };

export interface FlowBody {
  name: string;
  endpoint?: string;
  ingester_id?: string;
  target?: string;
  destination_id?: string;
  filter?: Record<string, unknown>;
  state?: 'DRAFT' | 'ACTIVE';
}

export const flowView: JsonSchema = {
  type: 'object',
  required: ['id', 'tenant_id', 'name', 'endpoint', 'target', 'ingester_id', 'destination_id', 'filter', 'state', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string', pattern: '^flw_' },
    tenant_id: { type: 'string' },
    name: { type: 'string' },
    endpoint: { type: 'string', description: "The ingester's id (SPEC's name for the reference; the same value as ingester_id)" },
    target: { type: 'string', description: "The destination's id (SPEC's name for the reference; the same value as destination_id)" },
    ingester_id: { type: 'string' },
    destination_id: { type: 'string' },
    filter: { type: 'object' },
    state: { type: 'string', enum: ['DRAFT', 'ACTIVE', 'DISABLED', 'DELETED'] },
    created_at: { type: 'string', format: 'date-time' },
    updated_at: { type: 'string', format: 'date-time' },
  },
};
