export { loadConfig, ConfigError, type EnvSchema, type ConfigOf } from './load-config';
export { baseEnv, type BaseConfig } from './base-env';
