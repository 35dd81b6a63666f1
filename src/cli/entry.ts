// Entry for running the CLI from source (`npm run dev`); bin/tollgate runs the built dist/cli/main.js.
import { run } from './main.js';

await run(process.argv.slice(2));
