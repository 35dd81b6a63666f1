import { redactUrlPassword } from '../redact-url.js';
import { inspectDatabase } from '../store/inspect-database.js';
import { CliError } from './cli-error.js';

/** The demo's own database, unless `--database` names another. */
export const DEMO_DATABASE_URL = 'sqlite:./data/demo.db';

/**
 * Refuses a database the demo did not create. The demo makes an admin with credit and prints its
 * password: on an operator's database that is a back door. A database is the demo's when it is new or
 * empty, or when the demo account is its first account — sign-ups made in the demo's dashboard come
 * after it, an operator's accounts before it. An account created in the same millisecond as the demo's
 * could have come first, so it counts as first too, and the database is refused. Checked before anything
 * is written; a SQLite file is opened read-only for it, so a refused database is left as it was.
 */
export async function checkDemoDatabase(url: string, demoEmail: string): Promise<void> {
  const found = await inspectDatabase(url);
  const problem =
    found.kind === 'foreign'
      ? 'it is not a Tollgate database'
      : found.kind === 'tollgate' && found.firstEmails.some((email) => email !== demoEmail)
        ? 'it holds accounts the demo did not create'
        : undefined;
  if (problem) {
    throw new CliError(
      `the demo does not run on ${redactUrlPassword(url)}: ${problem}. It only uses a database of its own: ` +
        'leave out --database for ./data/demo.db, or name a new file.',
      1,
      'not_a_demo_database',
    );
  }
}
