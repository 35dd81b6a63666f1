export {
  type Config,
  DEFAULT_SQLITE_CACHE_MB,
  type LogLevel,
  type ModelAlias,
  type SignupMode,
} from './config.js';
export { type DatabaseKind, databaseKindOf } from './database-kind.js';
export {
  ConfigError,
  isSetInEnvironment,
  type LoadConfigOptions,
  loadConfig,
  readConfig,
} from './load-config.js';
