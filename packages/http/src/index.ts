export { sendJson, sendProblem, readBody, BodyTooLargeError } from './respond';
export { requestId } from './request-id';
export { startHealthServer, type HealthServer, type ReadinessCheck, type ExtraRoutes } from './health-server';
export { closeServer } from './close-server';
export { onShutdownSignal } from './shutdown-signal';
export { cidrContains, ipInAny, normalizeIp, parseCidr, parseCidrList, parseIp, type Cidr } from './cidr';
export { getPath, getStringAt, parsePath } from './json-path';
