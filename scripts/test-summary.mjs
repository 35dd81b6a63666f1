// Prints vitest's result as one plain closing line ("N passed, N failed, N skipped") for CI logs.
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? '.vitest-results.json';
const r = JSON.parse(readFileSync(file, 'utf8'));
const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
if (r.numTotalTests === 0 || r.numFailedTests > 0) process.exit(1);
