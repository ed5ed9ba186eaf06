export { createTestDatabase, type TestDatabase } from './test-database';
export { uniquePrefix, flushPrefix } from './queue-prefix';
export { startReceiver, type Receiver, type ReceivedRequest, type ReceiverBehaviour } from './receiver';
export { startService, type ServiceProcess, type ServiceName } from './service-process';
export { seedTenant, type SeededTenant } from './seed';
export { waitFor } from './wait-for';
export { freePort } from './free-port';
export { startRedisProxy, type RedisProxy } from './redis-proxy';
export { shippedCommand, type ShippedCommand } from './shipped';
