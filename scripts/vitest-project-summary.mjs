// A vitest reporter: the result of each project (sqlite, postgres) into .vitest-projects.json, which
// scripts/test-summary.mjs prints as one line per project, and the tests skipped because something they
// need is missing here: each `SKIPPED: …` line a test file printed (test/helpers/system-programs.ts), with
// the files that printed it.

import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';

export default class ProjectSummaryReporter {
  /** SKIPPED line → the files (and their projects) that printed it. */
  skips = new Map();

  onInit(vitest) {
    this.vitest = vitest;
  }

  onUserConsoleLog(log) {
    for (const line of log.content.split('\n')) {
      if (!line.startsWith('SKIPPED: ')) continue;
      const task = this.vitest?.state.idMap.get(log.taskId);
      const file = task?.file ?? task;
      const where = file?.filepath
        ? `${relative(process.cwd(), file.filepath)}${file.projectName ? ` [${file.projectName}]` : ''}`
        : 'a test file';
      const files = this.skips.get(line) ?? new Set();
      files.add(where);
      this.skips.set(line, files);
    }
  }

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
      skipped: [...this.skips].map(([line, files]) => ({ line, files: [...files].sort() })),
      unhandledErrors: unhandledErrors.length,
    };
    writeFileSync('.vitest-projects.json', `${JSON.stringify(summary, null, 2)}\n`);
  }
}
