export { sendJson, sendProblem, readBody, BodyTooLargeError } from './respond';
export { requestId } from './request-id';
export { startHealthServer, type HealthServer, type ReadinessCheck } from './health-server';
export { closeServer } from './close-server';
export { onShutdownSignal } from './shutdown-signal';
