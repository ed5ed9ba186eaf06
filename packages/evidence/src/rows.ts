import type { MerkleRootRecord, Receipt } from './receipt';

/** evidence_receipts as pg returns it. */
export interface ReceiptRow {
  id: string;
  tenant_id: string;
  attempt_id: string;
  delivery_id: string;
  event_id: string;
  destination_id: string;
  destination_origin: string | null;
  attempt_number: number;
  outcome: string;
  status_code: number | null;
  error_kind: string | null;
  started_at: Date;
  completed_at: Date;
  duration_ms: number;
  request_body_sha256: string | null;
  response_body_sha256: string | null;
  key_id: string;
  signature: string;
  leaf_hash: string;
  issued_at: Date;
  merkle_root_id: string | null;
  leaf_index: number | null;
}

export interface RootRow {
  id: string;
  tenant_id: string;
  window_start: Date;
  window_end: Date;
  root_hash: string;
  leaf_count: number;
  key_id: string;
  signature: string;
  created_at: Date;
}

/** The receipt exactly as it was signed (the row adds only sealing bookkeeping). */
export function receiptOf(r: ReceiptRow): Receipt {
  return {
    v: 1,
    id: r.id,
    tenant_id: r.tenant_id,
    attempt_id: r.attempt_id,
    delivery_id: r.delivery_id,
    event_id: r.event_id,
    destination_id: r.destination_id,
    destination_origin: r.destination_origin,
    attempt_number: r.attempt_number,
    outcome: r.outcome === 'succeeded' ? 'succeeded' : 'failed',
    status_code: r.status_code,
    error_kind: r.error_kind,
    started_at: r.started_at.toISOString(),
    completed_at: r.completed_at.toISOString(),
    duration_ms: r.duration_ms,
    request_body_sha256: r.request_body_sha256,
    response_body_sha256: r.response_body_sha256,
    issued_at: r.issued_at.toISOString(),
    key_id: r.key_id,
    signature: r.signature,
  };
}

export function rootOf(r: RootRow): MerkleRootRecord {
  return {
    v: 1,
    id: r.id,
    tenant_id: r.tenant_id,
    window_start: r.window_start.toISOString(),
    window_end: r.window_end.toISOString(),
    root_hash: r.root_hash,
    leaf_count: r.leaf_count,
    created_at: r.created_at.toISOString(),
    key_id: r.key_id,
    signature: r.signature,
  };
}
