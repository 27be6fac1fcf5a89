import type { StoredBreadcrumb } from '../../core/breadcrumb-types.js';
import type { SqliteDatabase } from '../../store/sqlite/open-database.js';

/** Tampers with one stored audit block behind the store's back: sets `fields` on block `index` of `agentPk`. */
export function rewriteAuditBlock(
  db: SqliteDatabase,
  agentPk: string,
  index: number,
  fields: Partial<StoredBreadcrumb>,
): void {
  const sets = Object.keys(fields).map((k) => `${k} = @${k}`);
  db.prepare(`UPDATE audit_blocks SET ${sets.join(', ')} WHERE agent_pk = @pk AND idx = @index`).run({
    ...fields,
    pk: agentPk,
    index,
  });
}
