import type { ApiPlugin } from './app';
import type { ApiConfig } from './config';
import { edgePlugin } from './edge/edge.plugin';
import { mcpPlugin } from './mcp/mcp.plugin';

/** The plugins the api runs with: main.ts mounts them, and the api tests build the same app. */
export function defaultPlugins(config: ApiConfig, env: NodeJS.ProcessEnv = process.env): ApiPlugin[] {
  return [edgePlugin(env), mcpPlugin(config)];
}
