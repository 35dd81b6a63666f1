import type { Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { DatabaseUnavailableError } from '../../src/store/database-unavailable.js';
import { PostgresGroupWrites } from '../../src/store/postgres/group-writes.js';
import type { Database } from '../../src/store/schema.js';
import type { PlaceHoldInput } from '../../src/store/types.js';

/**
 * A stand-in for the PostgreSQL connection: every statement waits until the test answers it, so the test
 * decides what is in flight while other calls queue behind it.
 */
function pendingDatabase() {
  const statements: { resolve: (rows: unknown) => void; reject: (error: unknown) => void }[] = [];
  const db = {
    executeQuery: () =>
      new Promise((resolve, reject) => {
        statements.push({ resolve, reject });
      }),
  } as unknown as Kysely<Database>;
  return { db, statements };
}

const hold = (id: string): PlaceHoldInput => ({
  holdId: id,
  accountId: 'acct_1',
  requestId: `req-${id}`,
  amountNano: 100,
  owner: 'inst_a',
  createdAt: 0,
  expiresAt: 60_000,
});

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('PostgresGroupWrites: the calls of an account queued behind a statement', () => {
  it('fail with it at once when it found the database away, without a statement each', async () => {
    const { db, statements } = pendingDatabase();
    const writes = new PostgresGroupWrites(db);
    const first = writes.placeHold(hold('h1'));
    await turn();
    expect(statements).toHaveLength(1);
    // Two more calls of the same account arrive while the first statement hangs.
    const queued = [writes.placeHold(hold('h2')), writes.placeHold(hold('h3'))];
    await turn();
    expect(statements).toHaveLength(1);

    const away = new DatabaseUnavailableError(new Error('statement timeout'));
    statements[0]?.reject(away);
    await expect(first).rejects.toBe(away);
    for (const call of queued) await expect(call).rejects.toBe(away);
    expect(statements).toHaveLength(1);

    // The next call is sent as usual: the queue is not left failing.
    const next = writes.placeHold(hold('h4'));
    await turn();
    expect(statements).toHaveLength(2);
    statements[1]?.resolve({ rows: [{ placed: 1 }] });
    await expect(next).resolves.toBe(true);
  });

  it('are still sent when the statement ahead failed for another reason', async () => {
    const { db, statements } = pendingDatabase();
    const writes = new PostgresGroupWrites(db);
    const first = writes.placeHold(hold('h1'));
    await turn();
    const queued = writes.placeHold(hold('h2'));
    await turn();

    const refused = new Error('duplicate key value violates unique constraint "holds_pkey"');
    statements[0]?.reject(refused);
    await expect(first).rejects.toBe(refused);
    await turn();
    expect(statements).toHaveLength(2);
    statements[1]?.resolve({ rows: [{ placed: 1 }] });
    await expect(queued).resolves.toBe(true);
  });
});
