/**
 * A row read with raw pg (snake_case columns: `RETURNING *`) as its Prisma model (camelCase
 * fields): every model maps each field to the snake_case column of its name
 * (prisma/schema.prisma, @map), and pg parses the column types as Prisma does for these
 * tables (timestamptz → Date, jsonb → value, text[] → string[], enums → their text).
 * Writes answer with the row they wrote, never with a read after their commit (one that
 * fails there would turn an applied write into an error).
 */
export function asModel<T>(row: Record<string, unknown>): T {
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase()), v])) as T;
}
