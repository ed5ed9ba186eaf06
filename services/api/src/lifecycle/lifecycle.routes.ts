import type { RequestContext } from '../context';
import type { AuthedRoute } from '../http/route';
import type { JsonSchema } from '../http/validate';
import { ok } from '../lib/format';
import { changeState, type LifecycleKind, type Transition } from './lifecycle';

interface LifecycleGroup {
  kind: LifecycleKind;
  /** Path of one object, e.g. `/v1/tenants/:tid/ingesters/:iid`. */
  itemPath: string;
  idParam: string;
  operationPrefix: string;
  tag: string;
  scope: string;
  view: JsonSchema;
  load(ctx: RequestContext, id: string): Promise<unknown>;
  /** Also answer `…/publish` as apply (the flow group's SPEC wording). */
  publishAlias?: boolean;
}

const ACTIONS: { t: Transition; verb: string; summary: string }[] = [
  { t: 'apply', verb: 'apply', summary: 'Apply a DRAFT (→ ACTIVE); delivery starts' },
  { t: 'disable', verb: 'disable', summary: 'Stop an ACTIVE object (→ DISABLED); delivery stops' },
  { t: 'enable', verb: 'enable', summary: 'Re-enable a DISABLED object (→ ACTIVE)' },
];

/** apply / disable / enable (POST …/{id}/<action>) and DELETE (→ DELETED) for one group. */
export function lifecycleRoutes(g: LifecycleGroup): AuthedRoute[] {
  const run = (t: Transition) => async (ctx: RequestContext) => {
    const id = ctx.params[g.idParam]!;
    await changeState(ctx.app, g.kind, ctx.tenantId, id, t);
    return ok(t === 'delete' ? { id, state: 'DELETED' } : await g.load(ctx, id));
  };
  const common = { auth: 'credential', tenant: 'path', scope: g.scope } as const;
  return [
    ...[...ACTIONS, ...(g.publishAlias ? [{ t: 'apply' as const, verb: 'publish', summary: 'Publish (same as apply)' }] : [])].map(
      ({ t, verb, summary }): AuthedRoute => ({
        ...common,
        method: 'post',
        path: `${g.itemPath}/${verb}`,
        operationId: `${g.operationPrefix}.${verb}`,
        doc: { summary, tag: g.tag, status: 200, response: g.view, errors: [404, 409] },
        handler: run(t),
      }),
    ),
    {
      ...common,
      method: 'delete',
      path: g.itemPath,
      operationId: `${g.operationPrefix}.delete`,
      doc: {
        summary: 'Delete (DRAFT or DISABLED → DELETED; disable an ACTIVE object first)',
        tag: g.tag,
        status: 200,
        response: { type: 'object', required: ['id', 'state'], properties: { id: { type: 'string' }, state: { const: 'DELETED' } } },
        errors: [404, 409],
      },
      handler: run('delete'),
    },
  ];
}
