// A vitest reporter: the result of each project (sqlite, postgres) into .vitest-projects.json, which
// scripts/test-summary.mjs prints as one line per project.
import { writeFileSync } from 'node:fs';

export default class ProjectSummaryReporter {
  onTestRunEnd(testModules, unhandledErrors) {
    const projects = {};
    for (const module of testModules) {
      const name = module.project.name || 'default';
      projects[name] ??= { files: 0, failedFiles: 0, passed: 0, failed: 0, skipped: 0, testMs: 0 };
      const p = projects[name];
      p.files += 1;
      if (module.state() === 'failed') p.failedFiles += 1;
      p.testMs += Math.round(module.diagnostic().duration);
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') p.passed += 1;
        else if (state === 'failed') p.failed += 1;
        else p.skipped += 1;
      }
    }
    const summary = {
      projects,
      notRun: process.env.TOLLGATE_TESTS_NOT_RUN ?? null,
      unhandledErrors: unhandledErrors.length,
    };
    writeFileSync('.vitest-projects.json', `${JSON.stringify(summary, null, 2)}\n`);
  }
}
