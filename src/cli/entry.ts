// Entry for running the CLI from source (`npm run dev`); bin/tollgate runs the built dist/cli/main.js.
// As there, the V8 flags are set before the CLI's modules are loaded (a dynamic import, not a static one).
import { tuneV8 } from '../runtime/v8-tuning.js';

tuneV8();
const { run } = await import('./main.js');
await run(process.argv.slice(2));
