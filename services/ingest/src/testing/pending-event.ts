import { newId } from '@hookline/db';
import type { PendingEvent } from '../write-batch';

/** An event as ingest hands it to the batcher, for tests that drive the batcher or writeBatch directly. */
export function pendingEvent(ids: { ingesterId: string; tenantId: string }, over: Partial<PendingEvent> = {}): PendingEvent {
  return {
    eventId: newId('evt'),
    tenantId: ids.tenantId,
    ingesterId: ids.ingesterId,
    type: null,
    correlationId: 'c'.repeat(32),
    dedupKey: null,
    explicitKey: false,
    sourceIp: '127.0.0.1',
    receivedAt: new Date(),
    contentType: null,
    headers: {},
    query: null,
    body: Buffer.from('{}'),
    ...over,
  };
}
