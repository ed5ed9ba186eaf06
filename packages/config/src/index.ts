export { loadConfig, ConfigError, type EnvSchema, type ConfigOf } from './load-config';
export { baseEnv, MAX_TIMER_MS, type BaseConfig } from './base-env';
