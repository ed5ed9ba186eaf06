import * as z from 'zod';
import { bundleSchema, rootSchema } from '../mcp/tools/output-schemas';

/** A zod schema as a plain JSON Schema 2020-12 object, as OpenAPI 3.1 embeds it. */
export function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema) as Record<string, unknown>;
  return rest;
}

/** Receipt + inclusion proof + root (proof and root null until sealed): what `pnpm evidence:verify` reads. */
export const evidenceBundleSchema = jsonSchemaOf(bundleSchema);
export const merkleRootSchema = jsonSchemaOf(rootSchema);
