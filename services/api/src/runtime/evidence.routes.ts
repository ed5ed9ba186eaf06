import { AppError } from '@hookline/errors';
import { inclusionProof, listMerkleRoots } from '@hookline/evidence';
import type { AuthedRoute } from '../http/route';
import { encodeCursor, readPage } from '../http/pagination';
import { listOf } from '../http/schemas';
import { ok } from '../lib/format';
import { evidenceBundleSchema, merkleRootSchema } from '../openapi/evidence-schemas';

const TAG = 'Runtime (flat)';
const flat = { auth: 'credential', tenant: 'flat', scope: 'read:evidence', method: 'get' } as const;

/**
 * The Merkle side of delivery evidence (packages/evidence/README.md): the tenant's sealed
 * roots, and one receipt with its inclusion proof and root, ready for `pnpm evidence:verify`.
 */
export const evidenceRoutes: AuthedRoute[] = [
  {
    ...flat,
    path: '/v1/evidence/merkle-roots',
    operationId: 'flat.evidence.merkleRoots',
    doc: {
      summary: 'Sealed Merkle roots (one per tenant and time window), newest first',
      description: 'Each root commits to every receipt issued in its window (RFC 9162 hashing) and carries an HMAC under the evidence key. Roots are never rewritten. Cursor pagination only.',
      tag: TAG,
      response: listOf('merkle_roots', merkleRootSchema),
      query: ['limit', 'cursor'],
    },
    handler: async (ctx) => {
      const page = readPage(ctx.query, 'mrk');
      if (page.mode === 'offset') throw AppError.validation([{ field: 'offset', message: 'is not supported here; use cursor' }]);
      return ok(await listMerkleRoots(ctx.app.pool, ctx.tenantId, { limit: page.limit, cursor: page.beforeId ? encodeCursor(page.beforeId) : null }));
    },
  },
  {
    ...flat,
    path: '/v1/evidence/receipts/:id',
    operationId: 'flat.evidence.receipt',
    doc: {
      summary: 'One delivery receipt with its inclusion proof and Merkle root',
      description: 'proof and root are null until the receipt\'s window is sealed. Save the answer and run `pnpm evidence:verify <file>` to check it (see packages/evidence/README.md).',
      tag: TAG,
      response: evidenceBundleSchema,
      errors: [404],
    },
    handler: async (ctx) => {
      const bundle = await inclusionProof(ctx.app.pool, ctx.params['id']!, ctx.tenantId);
      if (!bundle) throw AppError.notFound('receipt');
      return ok(bundle);
    },
  },
];
