export { type Config, DEFAULT_SQLITE_CACHE_MB, type LogLevel, type SignupMode } from './config.js';
export { type DatabaseKind, databaseKindOf } from './database-kind.js';
export { ConfigError, loadConfig } from './load-config.js';
