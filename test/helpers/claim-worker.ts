// A bare queue consumer for the claim-safety test: waits for the common start time, then claims in small
// batches until the queue is empty, holding each item a few milliseconds, and prints the ids it claimed as
// JSON. Usage: node --import tsx claim-worker.ts <name> <start epoch ms> (databases from CPE_* env).
import { openDatabases } from '../../src/db/open.js';
import { claimQueueItems, completeQueueItem } from '../../src/engine/queue.js';

const name = process.argv[2] ?? `worker-${process.pid}`;
const dbs = await openDatabases({
  dataDir: process.env.CPE_DATA_DIR!,
  dbUrl: process.env.CPE_DB_URL,
  logDbUrl: process.env.CPE_LOG_DB_URL,
});
const startAt = Number(process.argv[3] ?? 0);
await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())));
const claimed: number[] = [];
for (;;) {
  const items = await claimQueueItems(dbs.content.sql, name, 3, 60_000);
  if (items.length === 0) break;
  for (const item of items) {
    claimed.push(item.id);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await completeQueueItem(dbs.content.sql, item.id, name);
  }
}
await dbs.close();
process.stdout.write(JSON.stringify(claimed));
