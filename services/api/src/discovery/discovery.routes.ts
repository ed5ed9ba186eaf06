import { resolve } from 'node:path';
import express, { type Router } from 'express';
import type { Discovery } from '@hookline/evidence';

/** The checkout the api runs from: proof statuses are worked out from its test files. */
export const REPO_ROOT = resolve(__dirname, '../../../..');

export interface DiscoveryDeps {
  /** Built once per process (see `cachedDiscovery` in @hookline/evidence). */
  discovery: () => Discovery;
}

/**
 * The discovery documents under /ai/evidence/v1/ and /ai/security/v1/. Public: they hold
 * no tenant data, only what the build does, how it is proven and what it does not claim.
 */
export function createDiscoveryRouter(deps: DiscoveryDeps): Router {
  const router = express.Router();
  router.get(['/ai/evidence/v1', '/ai/evidence/v1/*rest', '/ai/security/v1', '/ai/security/v1/*rest'], (req, res, next) => {
    const d = deps.discovery();
    const doc = d.documents[req.path.endsWith('/v1') ? `${req.path}/` : req.path];
    if (!doc) return next();
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.setHeader('Last-Modified', d.generatedAt.toUTCString());
    res.json(doc);
  });
  return router;
}
