export { QUEUES, POOL_NAME, poolQueueName, deliverQueueName, type QueueName, type JobData } from './catalog';
export { POOL_PATTERNS, parseDedicatedPools, parseDeliverQueues, deliverQueueOf } from './pools';
export { createRedis, redisReady, parseClusterNodes, isClusterClient, assertClusterPrefix, DEFAULT_REDIS_COMMAND_TIMEOUT_MS, type CreateRedisOptions, type Redis } from './redis';
export { createProducer, type Producer, type ProducerOptions } from './producer';
export { createWorker, type WorkerHandle } from './worker';
export { queueDepths } from './depths';
export { publishConfigChange, onConfigChange, configChannel, type ConfigChange } from './config-events';
export { destinationAdmitKey, destinationHealthKey, destinationRateKey, readDestinationHealthState, resetDestinationHealthState, type BreakerState, type DestinationHealthState } from './destination-state';
