import type { JsonSchema } from './validate';
import type { PageResult } from './pagination';

/** `{ <plural>: [...], next_cursor, next_offset? }`, the shape of every list. */
export function listOf(plural: string, item: JsonSchema): JsonSchema {
  return {
    type: 'object',
    required: [plural, 'next_cursor'],
    properties: {
      [plural]: { type: 'array', items: item },
      next_cursor: { type: ['string', 'null'], description: 'Opaque; pass back as `cursor` for the next page. null on the last page and in offset mode (as Svix and Stripe end their lists): there is no next page' },
      next_offset: { type: ['integer', 'null'], description: 'Offset mode only' },
    },
  };
}

export function listBody<T, V>(plural: string, page: PageResult<T>, view: (row: T) => V): Record<string, unknown> {
  return { [plural]: page.items.map(view), next_cursor: page.next_cursor, ...(page.next_offset !== undefined ? { next_offset: page.next_offset } : {}) };
}

export const STATE_ENUM = ['DRAFT', 'ACTIVE', 'DISABLED', 'DELETED'] as const;
