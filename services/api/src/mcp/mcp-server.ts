import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AppError, toProblem } from '@hookline/errors';
import { MCP_TOOLS, runTool } from './mcp-catalog';
import type { McpContext } from './mcp-deps';
import type { AnyTool } from './tools/tool-def';

/**
 * A failed call is a tool result with `isError` (not a JSON-RPC error), carrying the same
 * problem details the REST mirror answers: text for the model, `_meta` for programs.
 */
export function toolError(ctx: McpContext, tool: string, err: unknown): CallToolResult {
  if (!(err instanceof AppError)) ctx.deps.logger.error('mcp tool failed', { tool, request_id: ctx.requestId, err: err instanceof Error ? err.message : String(err) });
  const { problem } = toProblem(err, ctx.requestId);
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(problem) }], _meta: { 'hookline/problem': problem } };
}

function register(server: McpServer, ctx: McpContext, tool: AnyTool): void {
  const write = !('scope' in tool.access);
  server.registerTool(
    tool.name,
    {
      title: tool.title,
      description: tool.description,
      inputSchema: tool.input,
      outputSchema: tool.output,
      annotations: { readOnlyHint: !write, destructiveHint: false, idempotentHint: !write, openWorldHint: false },
      _meta: { 'hookline/access': 'scope' in tool.access ? { scope: tool.access.scope } : { tool_group: tool.access.group, enabled_by_default: false } },
    },
    async (args: Record<string, unknown>): Promise<CallToolResult> => {
      try {
        const out = await runTool(ctx, tool, args);
        return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
      } catch (err) {
        return toolError(ctx, tool.name, err);
      }
    },
  );
}

/** One MCP server per request (stateless Streamable HTTP): it closes over the caller's key. */
export function buildMcpServer(ctx: McpContext, version: string): McpServer {
  const server = new McpServer(
    { name: 'hookline', title: 'Hookline delivery evidence and operations', version },
    { instructions: 'Read tools are on for the scopes of your key. Write tools (retry, replay, configuration groups) are disabled unless the tenant enabled the group for this key. Check list_non_claims before stating what Hookline does.' },
  );
  for (const tool of MCP_TOOLS) register(server, ctx, tool);
  return server;
}
