/** Prints a command's result: one JSON object with --json, human lines otherwise. */
export interface Output {
  json: boolean;
  result(value: Record<string, unknown>, human: string): void;
  info(line: string): void;
}

export function createOutput(json: boolean): Output {
  return {
    json,
    result(value, human) {
      process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${human}\n`);
    },
    info(line) {
      // Progress lines go to stderr with --json, so stdout stays one JSON object.
      (json ? process.stderr : process.stdout).write(`${line}\n`);
    },
  };
}

export function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
