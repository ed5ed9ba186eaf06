import * as z from 'zod';
import { AppError } from '@hookline/errors';
import { EVIDENCE_ID_PREFIXES, listMerkleRoots, NON_CLAIMS, type ResolvedCapability } from '@hookline/evidence';
import type { McpContext } from '../mcp-deps';
import { decodeCursor, evidencePage, type EvidencePage } from '../mcp-evidence';
import { bundleSchema, capabilitySchema, proofSchema, rootSchema } from './output-schemas';
import { cursorOf, defineTool, idOf, limit, type AnyTool } from './tool-def';

const EVIDENCE = { scope: 'mcp:read:evidence' };

/** The ids get_evidence takes, and GET /v1/mcp/evidence/{id} answers (any other: 404): those evidenceFor knows. */
const EVIDENCE_ID = new RegExp(`^(${EVIDENCE_ID_PREFIXES.join('|')})_[0-9a-z]{10,40}$`);

/** What get_evidence and GET /v1/mcp/evidence/{id} answer, for the tool and the OpenAPI document. */
export const EVIDENCE_DESCRIPTION =
  'Receipts with inclusion proofs and roots (proof and root null until sealed). For a receipt (rcp_), attempt (att_), delivery (dlv_), event (evt_) or root (mrk_) id: its receipts, oldest first. ' +
  'For an ingester (ing_): the receipts of the deliveries of the events received on it; a destination (dst_): of the deliveries to it; a flow (flw_): of its deliveries; newest first (newest event first for an ingester, newest delivery first for a destination or flow; within a delivery, its latest attempt first). ' +
  "Only the key's tenant's: an id of another tenant, or one with no receipts, is not found (404), with or without a cursor; a DELETED ingester, destination or flow keeps the receipts it has (receipts are never withdrawn). " +
  'A page at a time (limit, default 20, max 100): while has_more, pass next_cursor as cursor for the rest (a cursor of another list: 400). Verify them with `pnpm evidence:verify`.';

/** get_evidence and GET /v1/mcp/evidence/{id}: a next_cursor names a receipt. */
export const evidenceCursor = cursorOf((c) => idOf('rcp').safeParse(decodeCursor(c)).success);

function proofsOf(ctx: McpContext, prefix: 'PROOF-' | 'TRUST-'): z.infer<typeof proofSchema>[] {
  return ctx.deps
    .discovery()
    .capabilities.filter((c: ResolvedCapability) => c.def.proof_id.startsWith(prefix))
    .map((c) => ({ proof_id: c.def.proof_id, capability_id: c.def.id, name: c.def.name, proof_status: c.status, evidence_refs: c.evidence_refs, missing: c.missing, integrity_ref: c.integrity_ref }));
}

const proofList = (name: string, prefix: 'PROOF-' | 'TRUST-', what: string): AnyTool =>
  defineTool({
    name,
    title: `List ${what} proofs`,
    description: `${prefix}001…${prefix}010: each ${what} proof with its status and the named tests that prove it (statuses are worked out from the tests present in this build).`,
    access: EVIDENCE,
    input: {},
    output: z.object({ proofs: z.array(proofSchema) }),
    run: async (ctx) => ({ proofs: proofsOf(ctx, prefix) }),
  });

export const evidenceTools: AnyTool[] = [
  defineTool({
    name: 'get_capabilities',
    title: 'Get capabilities',
    description: 'Runtime and trust capabilities of this build with their proof_status, evidence and non-claims (the capability manifest).',
    access: EVIDENCE,
    input: { family: z.enum(['runtime', 'trust', 'gap']).optional().describe('Only PROOF-, TRUST- or GAP- capabilities') },
    output: z.object({ schema_version: z.string(), generated_at: z.string(), evidence_scope: z.string(), capabilities: z.array(capabilitySchema) }),
    run: async (ctx, args) => {
      const m = ctx.deps.discovery().manifest;
      const prefix = args.family ? { runtime: 'PROOF-', trust: 'TRUST-', gap: 'GAP-' }[args.family] : '';
      return { schema_version: m.schema_version, generated_at: m.generated_at, evidence_scope: m.evidence_scope, capabilities: m.capabilities.filter((c) => c.proof_id.startsWith(prefix)) };
    },
  }),
  proofList('list_runtime_proofs', 'PROOF-', 'runtime'),
  proofList('list_trust_proofs', 'TRUST-', 'trust'),
  defineTool({
    name: 'list_non_claims',
    title: 'List non-claims',
    description: 'What Hookline explicitly does not do or promise, by category.',
    access: EVIDENCE,
    // An enum, not a lookup of any string: `toString` or `__proto__` would find Object's own members.
    input: { category: z.enum(Object.keys(NON_CLAIMS) as [string, ...string[]]).optional().describe('Only this category') },
    output: z.object({ categories: z.record(z.string(), z.array(z.string())) }),
    run: async (_ctx, args) => ({
      categories: args.category ? { [args.category]: [...NON_CLAIMS[args.category]!] } : Object.fromEntries(Object.entries(NON_CLAIMS).map(([k, v]) => [k, [...v]])),
    }),
  }),
  defineTool({
    name: 'list_merkle_evidence_refs',
    title: 'List Merkle evidence references',
    description: "The tenant's sealed Merkle roots over delivery receipts (window, root hash, leaf count, key id, signature), newest first.",
    access: EVIDENCE,
    input: { limit, cursor: cursorOf((c) => idOf('mrk').safeParse(Buffer.from(c, 'base64url').toString('utf8')).success) },
    output: z.object({ merkle_roots: z.array(rootSchema), next_cursor: z.string().nullable() }),
    run: async (ctx, args) => listMerkleRoots(ctx.deps.pool, ctx.principal.tenantId, args),
  }),
  defineTool({
    name: 'get_evidence',
    title: 'Get delivery evidence',
    description: EVIDENCE_DESCRIPTION,
    access: EVIDENCE,
    input: { id: z.string().regex(EVIDENCE_ID, 'an rcp_, att_, dlv_, evt_, mrk_, ing_, dst_ or flw_ id'), limit, cursor: evidenceCursor },
    output: z.object({ resource_id: z.string(), receipts: z.array(bundleSchema), next_cursor: z.string().nullable(), has_more: z.boolean() }),
    run: async (ctx, args) => evidenceReply(ctx, args.id, args),
  }),
];

/** Shared by the tool and GET /v1/mcp/evidence/{id}: an id of another shape names no evidence (404, as an unknown one). */
export async function evidenceReply(ctx: McpContext, id: string, page: { limit?: number; cursor?: string }): Promise<{ resource_id: string } & EvidencePage> {
  if (!EVIDENCE_ID.test(id)) throw AppError.notFound('evidence');
  const found = await evidencePage(ctx.deps.pool, ctx.principal.tenantId, id, page);
  if (!found) throw AppError.notFound('evidence');
  return { resource_id: id, ...found };
}
