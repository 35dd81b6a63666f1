export type { Config, LogLevel } from './config.js';
export { ConfigError, loadConfig } from './load-config.js';
