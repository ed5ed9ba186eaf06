import { isObject, member } from '../json-values';

/**
 * HTTP header names are case-insensitive and the filter document holds them in lower case
 * (`$.headers['x-github-event']`). The rule, for queries run against a FilterDocument: a
 * name selected from the event's headers object (the object at `$.headers`) is lowered
 * first, however the query reaches that object:
 *
 * - `$.headers['X-Env']`, `$['headers'].X-Env`, `$.*['X-Env']`, `$..['X-Env']`;
 * - `$[?(@.headers['X-Env'] == 'prod')]` (`@` is the event) and `$[?($.headers.X-Env)]`;
 * - `$.headers[?(@['X-Env'] == 'prod')]` (a filter on an object tests the object itself, so
 *   `@` is the headers object), at any filter nesting depth.
 *
 * The test is the identity of the node a name is selected from, checked when the selector
 * runs, so a name selected from any other object (body keys, `$.body.headers['X-A']`, query
 * parameters) is compared exactly as written.
 */
export function headersObject(doc: unknown): object | undefined {
  if (!isObject(doc)) return undefined;
  const m = member(doc, 'headers');
  return isObject(m.value) ? m.value : undefined;
}

/** The member name to look up in `node`: lowered when `node` is the document's headers object. */
export function memberName(name: string, node: object, headers: object | undefined): string {
  return node === headers ? name.toLowerCase() : name;
}
