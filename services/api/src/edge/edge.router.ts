import { setTimeout as sleep } from 'node:timers/promises';
import express, { type Request, type Response, type Router } from 'express';
import { edgePaths, type ReportRequest, type ReportResponse, type WorkRequest, type WorkResponse } from '@hookline/delivery';
import { assertJsonBody } from '../http/json-body';
import { assertStorableRequest } from '../http/storable-request';
import { assertValid } from '../http/validate';
import { touchCluster } from './cluster-status';
import { verifyEdgeRequest, type EdgeCluster } from './edge-auth';
import type { EdgeDeps } from './edge-deps';
import { leaseWork } from './lease-work';
import { recordReports } from './record-reports';
import { reportRequestSchema, workRequestSchema } from './edge.schemas';

/** Authenticates, validates and marks the cluster seen; the handler gets a typed body. */
async function accept<T extends { agent_version: string }>(deps: EdgeDeps, req: Request, schema: Record<string, unknown>): Promise<{ cluster: EdgeCluster; body: T }> {
  assertStorableRequest(req);
  // The signature covers the parsed JSON bytes: a body of another type could only fail as a bad signature.
  assertJsonBody(req);
  const cluster = await verifyEdgeRequest(deps, req);
  assertValid(schema, req.body ?? null);
  const body = req.body as T;
  await touchCluster(deps.pool, cluster.id, body.agent_version);
  return { cluster, body };
}

/** Waits `ms`, or less once the api starts draining. */
async function pause(ms: number, draining: AbortSignal): Promise<void> {
  await sleep(ms, undefined, { signal: draining }).catch(() => undefined);
}

/**
 * Long-poll: leases due deliveries as soon as there are some, else looks again every
 * EDGE_WORK_POLL_MS until the wait is over. Nothing is leased for a caller that left, nor
 * once the api drains: a response cut at the drain deadline would strand its leases.
 */
async function work(deps: EdgeDeps, req: Request, res: Response): Promise<void> {
  // Before any await, and with the socket checked too: the caller may have left while the
  // body was read or while the request is authenticated.
  let closed = false;
  res.on('close', () => (closed = true));
  const gone = (): boolean => closed || req.socket.destroyed;
  const { cluster, body } = await accept<WorkRequest>(deps, req, workRequestSchema);
  const max = Math.min(body.max, deps.config.EDGE_BATCH_MAX);
  const deadline = Date.now() + Math.min(body.wait_seconds, deps.config.EDGE_MAX_WAIT_SECONDS) * 1000;
  let deliveries: WorkResponse['deliveries'] = [];
  while (max > 0 && !gone() && !deps.draining.aborted) {
    deliveries = await leaseWork(deps, cluster, { agentId: body.agent_id, max });
    const left = deadline - Date.now();
    if (deliveries.length > 0 || left <= 0) break;
    await pause(Math.min(deps.config.EDGE_WORK_POLL_MS, left), deps.draining);
  }
  if (deliveries.length > 0) deps.logger.debug('leased deliveries to an agent', { cluster_id: cluster.id, agent_id: body.agent_id, count: deliveries.length });
  const out: WorkResponse = { deliveries, response_body_limit: deps.config.RESPONSE_BODY_LIMIT };
  res.json(out);
}

async function reports(deps: EdgeDeps, req: Request, res: Response): Promise<void> {
  const { cluster, body } = await accept<ReportRequest>(deps, req, reportRequestSchema);
  const out: ReportResponse = { results: await recordReports(deps, cluster, body.reports) };
  res.json(out);
}

/**
 * The agent-facing endpoints (outbound-only agents call in; the service never connects
 * to a private network): `POST /v1/edge/clusters/{cid}/work` and `…/reports`, both
 * HMAC-signed with the cluster key. Errors go to the api's problem-details middleware.
 */
export function createEdgeRouter(deps: EdgeDeps): Router {
  const router = express.Router();
  router.post(edgePaths.work(':cid'), (req, res) => work(deps, req, res));
  router.post(edgePaths.reports(':cid'), (req, res) => reports(deps, req, res));
  return router;
}
