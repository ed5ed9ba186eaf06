import * as z from 'zod';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool, type ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { AppError, type ProblemDetails } from '@hookline/errors';
import { apiProblem, asServiceError } from '../http/api-problem';
import { findTool, MCP_TOOLS, runTool } from './mcp-catalog';
import type { McpContext } from './mcp-deps';
import type { AnyTool } from './tools/tool-def';

/** Problem details as a failed tool result: text for the model, `_meta` for programs. */
export function problemResult(problem: ProblemDetails): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(problem) }], _meta: { 'hookline/problem': problem } };
}

/**
 * A failed call is a tool result with `isError` (not a JSON-RPC error), carrying the same
 * problem details the REST mirror answers.
 */
export function toolError(ctx: McpContext, tool: string, err: unknown): CallToolResult {
  const mapped = asServiceError(err);
  if (!(mapped instanceof AppError)) ctx.deps.logger.error('mcp tool failed', { tool, request_id: ctx.requestId, err: err instanceof Error ? err.message : String(err) });
  return problemResult(apiProblem(err, ctx.requestId).problem);
}

const READ_ONLY: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
// The MCP spec's defaults: what a client must assume of a write tool that says nothing.
const WORST_CASE = { destructive: true, idempotent: false, openWorld: true };

function annotationsOf(tool: AnyTool): ToolAnnotations {
  if ('scope' in tool.access) return READ_ONLY;
  const e = tool.effects ?? WORST_CASE;
  return { readOnlyHint: false, destructiveHint: e.destructive, idempotentHint: e.idempotent, openWorldHint: e.openWorld };
}

const jsonSchema = (schema: z.ZodType, io: 'input' | 'output'): Tool['inputSchema'] => z.toJSONSchema(schema, { target: 'draft-7', io }) as Tool['inputSchema'];

function describe(tool: AnyTool): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: jsonSchema(z.object(tool.input), 'input'),
    outputSchema: jsonSchema(tool.output, 'output'),
    annotations: annotationsOf(tool),
    execution: { taskSupport: 'forbidden' },
    _meta: { 'hookline/access': 'scope' in tool.access ? { scope: tool.access.scope } : { tool_group: tool.access.group, enabled_by_default: false } },
  };
}

let listing: Tool[] | undefined;

/**
 * tools/call. The catalog checks access before arguments (see runTool), which is why this is
 * the SDK's low-level Server and not McpServer: McpServer validates arguments before any
 * handler runs. A result that does not match the tool's output schema is never sent (500).
 */
async function callTool(ctx: McpContext, name: string, args: unknown): Promise<CallToolResult> {
  try {
    const tool = findTool(name);
    if (!tool) throw new AppError('not-found', `There is no MCP tool named ${name}.`);
    const out = await runTool(ctx, tool, args, { strict: false });
    const checked = tool.output.safeParse(out);
    if (!checked.success) throw new Error(`the result of ${name} does not match its output schema: ${checked.error.message}`);
    return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
  } catch (err) {
    return toolError(ctx, name, err);
  }
}

/** One MCP server per request (stateless Streamable HTTP): it closes over the caller's key. */
export function buildMcpServer(ctx: McpContext, version: string): Server {
  const server = new Server(
    { name: 'hookline', title: 'Hookline delivery evidence and operations', version },
    {
      capabilities: { tools: {} },
      instructions: 'Read tools are on for the scopes of your key. Write tools (retry, replay, configuration groups) are disabled unless the tenant enabled the group for this key. Check list_non_claims before stating what Hookline does.',
    },
  );
  listing ??= MCP_TOOLS.map(describe);
  const tools = listing;
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, (req) => callTool(ctx, req.params.name, req.params.arguments));
  return server;
}

type Message = { id?: unknown; method?: unknown } | null;
const isRequest = (m: Message): m is { id: string | number; method: string } => typeof m?.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number');

/**
 * A JSON-RPC POST refused as a whole (429), answered in MCP's terms inside the HTTP error:
 * a tools/call gets a failed tool result with the problem in `_meta` (as every failed
 * call), any other request a JSON-RPC error with it in `data`; a body with no request to
 * answer gets one error with a null id, as the SDK's transport answers its own refusals.
 */
export function refusedMessages(body: unknown, problem: ProblemDetails): object {
  const error = { code: -32000, message: problem.detail, data: { 'hookline/problem': problem } };
  const requests = (Array.isArray(body) ? (body as Message[]) : [body as Message]).filter(isRequest);
  const answers = requests.map((m) => (m.method === 'tools/call' ? { jsonrpc: '2.0', id: m.id, result: problemResult(problem) } : { jsonrpc: '2.0', id: m.id, error }));
  if (!answers.length) return { jsonrpc: '2.0', id: null, error };
  return Array.isArray(body) ? answers : answers[0]!;
}
