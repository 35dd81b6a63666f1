/** A CLI failure with the exit code to use (2 for usage errors, 1 otherwise). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
    readonly code = 'error',
    /** For a usage error: the usage to print when it is not the command's own line. */
    readonly usage?: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** A mistake on the command line: reported with the command's usage line, exit code 2. */
export function usageError(message: string, usage?: string): CliError {
  return new CliError(message, 2, 'usage', usage);
}
