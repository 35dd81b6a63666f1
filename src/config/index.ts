export type { Config, LogLevel, SignupMode } from './config.js';
export { ConfigError, loadConfig } from './load-config.js';
