import { setTimeout as sleep } from 'node:timers/promises';
import express, { type Request, type Response, type Router } from 'express';
import { edgePaths, type ReleaseRequest, type ReleaseResponse, type ReportRequest, type ReportResponse, type WorkItem, type WorkRequest, type WorkResponse } from '@hookline/delivery';
import { assertJsonBody } from '../http/json-body';
import { assertStorableRequest } from '../http/storable-request';
import { assertValid } from '../http/validate';
import { touchCluster } from './cluster-status';
import { verifyEdgeRequest, type EdgeCluster } from './edge-auth';
import type { EdgeDeps } from './edge-deps';
import { newEdgeLeaseOwner } from './lease-owner';
import { leaseWork } from './lease-work';
import { recordReports } from './record-reports';
import { releaseAgentLeases, releasePollLeases } from './release-leases';
import { assertReportTimes } from './report-times';
import { releaseRequestSchema, reportRequestSchema, workRequestSchema } from './edge.schemas';

/**
 * Authenticates, validates (the schema, then `check`: what a schema cannot say) and marks the
 * cluster seen; the handler gets a typed body.
 */
async function accept<T extends { agent_version: string }>(deps: EdgeDeps, req: Request, schema: Record<string, unknown>, check?: (body: T) => void): Promise<{ cluster: EdgeCluster; body: T }> {
  assertStorableRequest(req);
  // The signature covers the parsed JSON bytes: a body of another type could only fail as a bad signature.
  assertJsonBody(req);
  const cluster = await verifyEdgeRequest(deps, req);
  assertValid(schema, req.body ?? null);
  const body = req.body as T;
  check?.(body);
  await touchCluster(deps.pool, cluster.id, body.agent_version);
  return { cluster, body };
}

/** Waits `ms`, or less once the api starts draining. */
async function pause(ms: number, draining: AbortSignal): Promise<void> {
  await sleep(ms, undefined, { signal: draining }).catch(() => undefined);
}

/**
 * Gives back at once what a poll leased but cannot hand out, rather than leaving it until
 * the lease expires (EDGE_LEASE_MS), with the rate tokens they took in the current window
 * and the probe slot one of them holds (releasePollLeases). Best effort: should the release
 * fail, the leases expire.
 */
async function giveBack(deps: EdgeDeps, cluster: EdgeCluster, leaseOwner: string, items: WorkItem[], why: string): Promise<void> {
  try {
    const ids = await releasePollLeases(deps, leaseOwner, items.map((d) => d.id));
    deps.logger.info('gave back the leases of a work response that could not reach its agent', { cluster_id: cluster.id, lease_owner: leaseOwner, why, count: ids.length });
  } catch (err) {
    deps.logger.warn('could not give back the leases of a work response that could not reach its agent; they expire', { cluster_id: cluster.id, lease_owner: leaseOwner, why, error: (err as Error).message });
  }
}

/** Lease statements a poll runs back to back while each one's deliveries were all held back. */
const HELD_BACK_RELOOKS = 4;

/**
 * Long-poll: leases due deliveries as soon as there are some, else looks again every
 * EDGE_WORK_POLL_MS until the wait is over, or until the cluster is disabled or deleted
 * or the key that signed the poll is revoked (then it answers an empty list at once,
 * lease-work.ts LEASE_SQL). Nothing is leased for a caller that left, nor
 * once the api drains: a response cut at the drain deadline would strand its leases. The
 * lease statement itself may run while that happens (the caller leaves, the drain starts):
 * what it leased is then given back at once, unsent, with no attempt, and so is what a
 * response that could not be written completely carried.
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
  // One lease owner for the poll: every row it leases, and nothing else, carries it; it
  // names the cluster, which alone may report or release it (lease-owner.ts).
  const leaseOwner = newEdgeLeaseOwner(cluster.id, body.agent_id);
  let deliveries: WorkResponse['deliveries'] = [];
  let lookedAgain = 0;
  while (max > 0 && !gone() && !deps.draining.aborted) {
    const leased = await leaseWork(deps, cluster, { leaseOwner, max });
    // Disabled, deleted, or its key revoked since the poll was authenticated: the poll ends
    // at once with an empty list (what an agent handles as "nothing to do"); its next
    // request is refused.
    if (leased.revoked) {
      deps.logger.info('ended a work poll: the cluster is no longer active or its key was revoked', { cluster_id: cluster.id, agent_id: body.agent_id });
      deliveries = [];
      break;
    }
    deliveries = leased.deliveries;
    if (deliveries.length > 0 && (gone() || deps.draining.aborted)) {
      await giveBack(deps, cluster, leaseOwner, deliveries, gone() ? 'caller_left' : 'draining');
      deliveries = [];
      break;
    }
    if (deliveries.length > 0) break;
    // Everything leased was held back (circuit open, rate budget spent) and is postponed now:
    // other destinations' due deliveries may wait behind it, so look again at once, a few
    // times (even for a poll that does not wait), rather than one poll interval per batch
    // of a held-back backlog.
    if (leased.heldBack > 0 && lookedAgain < HELD_BACK_RELOOKS) {
      lookedAgain++;
      continue;
    }
    const left = deadline - Date.now();
    if (left <= 0) break;
    lookedAgain = 0;
    await pause(Math.min(deps.config.EDGE_WORK_POLL_MS, left), deps.draining);
  }
  if (deliveries.length > 0) {
    deps.logger.debug('leased deliveries to an agent', { cluster_id: cluster.id, agent_id: body.agent_id, count: deliveries.length });
    // A response the connection dropped before it was written out whole cannot be read by
    // the agent (it is one JSON document): its leases go back too.
    const handedOut = deliveries;
    res.once('close', () => {
      if (!res.writableFinished) void giveBack(deps, cluster, leaseOwner, handedOut, 'response_cut');
    });
  }
  const out: WorkResponse = { deliveries, response_body_limit: deps.config.RESPONSE_BODY_LIMIT };
  res.json(out);
}

async function reports(deps: EdgeDeps, req: Request, res: Response): Promise<void> {
  // A report whose started_at is not a real instant, or is outside the window an attempt
  // under a lease can have started in, refuses the whole request before anything is written.
  const { cluster, body } = await accept<ReportRequest>(deps, req, reportRequestSchema, (b) => assertReportTimes(deps, b.reports));
  const out: ReportResponse = { results: await recordReports(deps, cluster, body.reports) };
  res.json(out);
}

/**
 * Leases an agent gives back unsent (at its stop): each freed only while that lease, taken
 * by the caller's cluster and agent, still holds its delivery; answered per item like reports.
 */
async function releases(deps: EdgeDeps, req: Request, res: Response): Promise<void> {
  const { cluster, body } = await accept<ReleaseRequest>(deps, req, releaseRequestSchema);
  const results = await releaseAgentLeases(deps, cluster, body.agent_id, body.releases);
  const count = results.filter((r) => r.result === 'released').length;
  if (count > 0) deps.logger.info('an agent gave back leases unsent', { cluster_id: cluster.id, agent_id: body.agent_id, count });
  const out: ReleaseResponse = { results };
  res.json(out);
}

/**
 * The agent-facing endpoints (outbound-only agents call in; the service never connects
 * to a private network): `POST /v1/edge/clusters/{cid}/work`, `…/reports` and
 * `…/releases`, all HMAC-signed with the cluster key. Errors go to the api's
 * problem-details middleware.
 */
export function createEdgeRouter(deps: EdgeDeps): Router {
  const router = express.Router();
  router.post(edgePaths.work(':cid'), (req, res) => work(deps, req, res));
  router.post(edgePaths.reports(':cid'), (req, res) => reports(deps, req, res));
  router.post(edgePaths.releases(':cid'), (req, res) => releases(deps, req, res));
  return router;
}
