// Prints vitest's result as plain closing lines for CI logs: one per project (sqlite, postgres), what was
// skipped because something it needs is missing here, and the total ("tests: N passed, N failed, N
// skipped"). Exits non-zero when anything failed, nothing ran, or (in CI, CI=true) anything was skipped
// for a missing program.
import { existsSync, readFileSync } from 'node:fs';

const file = process.argv[2] ?? '.vitest-results.json';
if (!existsSync(file)) {
  console.log(`tests: no results (${file} is missing): vitest ended before it could report`);
  process.exit(1);
}
const r = JSON.parse(readFileSync(file, 'utf8'));
let failed = r.numTotalTests === 0 || r.numFailedTests > 0;

const perProject = '.vitest-projects.json';
if (existsSync(perProject)) {
  const { projects, notRun, skipped = [], unhandledErrors } = JSON.parse(readFileSync(perProject, 'utf8'));
  for (const [name, p] of Object.entries(projects)) {
    const fileNote =
      p.failedFiles > 0 ? ` (${p.failedFiles} of ${p.files} files failed)` : ` in ${p.files} files`;
    console.log(
      `tests [${name}]: ${p.passed} passed, ${p.failed} failed, ${p.skipped} skipped${fileNote}; ${(p.testMs / 1000).toFixed(0)} s of test time`,
    );
    if (p.failedFiles > 0) failed = true;
  }
  if (notRun) console.log(`tests: ${notRun}`);
  for (const { line, files } of skipped) console.log(`tests: ${line} (${files.join(', ')})`);
  if (skipped.length > 0 && process.env.CI === 'true') {
    console.log('tests: CI must skip nothing');
    failed = true;
  }
  if (unhandledErrors > 0) {
    console.log(`tests: ${unhandledErrors} unhandled errors`);
    failed = true;
  }
}
const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
if (failed) process.exit(1);
