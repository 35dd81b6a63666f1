import { withStore } from '../context.js';
import type { Output } from '../output.js';

/** `tollgate migrate` — applies pending migrations. */
export async function migrate(out: Output): Promise<void> {
  await withStore(
    async (store, config) => {
      out.result(
        { ok: true, dialect: store.dialect, database: redactUrl(config.databaseUrl) },
        `Migrations applied (${store.dialect}).`,
      );
    },
    { create: { out } },
  );
}

/** A database URL without its password, for output. */
export function redactUrl(url: string): string {
  return url.replace(/(\/\/[^:/@]+:)[^@]*@/, '$1***@');
}
