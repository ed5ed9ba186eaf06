import * as z from 'zod';
import type { McpContext } from '../mcp-deps';

export const TOOL_GROUPS = ['retry', 'replay', 'configuration'] as const;
export type ToolGroup = (typeof TOOL_GROUPS)[number];

/** A read tool needs an MCP scope; a write tool needs its group enabled for the key. */
export type ToolAccess = { scope: string } | { group: ToolGroup };

/**
 * What a write tool does, published as its MCP ToolAnnotations: `destructive` when it may
 * change or stop what existing deliveries do (not only add something), `idempotent` when
 * calling it again with the same arguments has no further effect, `openWorld` when its effect
 * reaches endpoints outside Hookline (webhook receivers).
 */
export interface WriteEffects {
  destructive: boolean;
  idempotent: boolean;
  openWorld: boolean;
}

export interface ToolDef<I extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  access: ToolAccess;
  input: I;
  output: z.ZodObject;
  run(ctx: McpContext, args: z.infer<z.ZodObject<I>>): Promise<Record<string, unknown>>;
  /** For write tools: the resource the call acts on, for the audit row. */
  resourceOf?(args: z.infer<z.ZodObject<I>>): string;
  /** For write tools; absent, the MCP defaults (the worst case) are published. */
  effects?: WriteEffects;
}

/** A tool with its argument type erased, so tools of different inputs share one list. */
export type AnyTool = ToolDef<z.ZodRawShape> & { run(ctx: McpContext, args: Record<string, unknown>): Promise<Record<string, unknown>> };

export function defineTool<I extends z.ZodRawShape>(def: ToolDef<I>): AnyTool {
  return def as unknown as AnyTool;
}

export const idOf = (prefix: string) => z.string().regex(new RegExp(`^${prefix}_[0-9a-z]{10,40}$`), `a ${prefix}_… id`);
export const limit = z.number().int().min(1).max(100).optional().describe('Page size, default 20, max 100');
/**
 * A `next_cursor` this list issued; anything else is refused (400) rather than read as the
 * start of the list. A refinement, not a pattern, so the format stays opaque to clients.
 */
export const cursorOf = (issued: (cursor: string) => boolean) =>
  z.string().max(200).refine(issued, 'is not a next_cursor of this list').optional().describe('next_cursor of the previous page');
