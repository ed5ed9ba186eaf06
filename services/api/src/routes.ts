import { apiKeyRoutes } from './api-keys/api-key.routes';
import { auditRoutes } from './audit/audit.routes';
import { loginRoutes } from './auth/login.routes';
import { bffRoutes } from './bff/bff.routes';
import { clusterRoutes } from './clusters/cluster.routes';
import { deliveryRoutes } from './deliveries/delivery.routes';
import { destinationRoutes } from './destinations/destination.routes';
import { eventRoutes } from './events/event.routes';
import { flowRoutes } from './flows/flow.routes';
import type { RouteDef } from './http/route';
import { ingesterRoutes } from './ingesters/ingester.routes';
import { rejectionRoutes } from './ingesters/rejection.routes';
import type { ExtraPaths } from './openapi/build-openapi';
import { openApiRoutes } from './openapi/openapi.routes';
import { replayRoutes } from './replay/replay.routes';
import { evidenceRoutes } from './runtime/evidence.routes';
import { flatRoutes } from './runtime/flat.routes';
import { statusRoutes } from './runtime/status.routes';
import { savedPayloadRoutes } from './saved-payloads/saved-payload.routes';

/** Every route of the api, in one list: express mounts it and OpenAPI documents it. */
export function allRoutes(extraPaths: ExtraPaths = {}): RouteDef[] {
  const routes: RouteDef[] = [
    ...loginRoutes,
    ...ingesterRoutes,
    ...rejectionRoutes,
    ...destinationRoutes,
    ...flowRoutes,
    ...deliveryRoutes,
    ...eventRoutes,
    ...replayRoutes,
    ...apiKeyRoutes,
    ...savedPayloadRoutes,
    ...clusterRoutes,
    ...auditRoutes,
    ...flatRoutes,
    ...evidenceRoutes,
    ...statusRoutes,
    ...bffRoutes,
  ];
  routes.push(...openApiRoutes(() => routes, extraPaths));
  return routes;
}
