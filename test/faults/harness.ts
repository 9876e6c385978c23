import { type ChildProcessByStdio, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Engine } from '../../src/engine/engine.js';
import { planPipeline } from '../../src/engine/plan.js';
import { runPipeline } from '../../src/engine/runner.js';
import { createTestSetup, type TestSetup } from '../helpers/backends.js';
import { projectRoot } from '../helpers/cli.js';
import { handleOllamaChat, newOllamaChatState } from '../servers/ollama-chat.js';
import { type OllamaTestServer, startOllamaServer } from '../servers/ollama-server.js';
import { type QdrantTestServer, startQdrantServer } from '../servers/qdrant-server.js';

/** What a fault-free run of the Standard pipeline makes of each source file (status and chunk count). */
export interface Expected {
  sourceDir: string;
  byPath: Map<string, { status: string; chunks: number }>;
  generated: number;
  fromCorpus: number;
}

export interface CaseResult {
  name: string;
  documents: number;
  duplicates: number;
  lost: number;
  stuck: number;
  wallMs: number;
  /** everything that differs from the expectation, in words (empty = the case passed) */
  problems: string[];
}

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); undefined when unknown. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    // fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/**
 * Generated German training documents of one to four sections each; every text is distinct, so every chunk
 * needs its own embedding (the cache cannot hide a lost request) and its own point.
 */
export function writeGeneratedDocuments(dir: string, n: number): void {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < n; i++) {
    const sections: string[] = [];
    for (let s = 0; s <= i % 4; s++) {
      sections.push(
        `## Abschnitt ${i}.${s + 1}: Qualitätssicherung im Team ${i % 17}\n\n` +
          `Die Auftragsklärung Nr. ${i}-${s} beschreibt z. B. Ziele, Rollen und Abläufe. Jede Maßnahme ${s} wird geprüft, ` +
          `d. h. dokumentiert und von der Leitung freigegeben (Version ${i}.${s}). Rückmeldungen der Teilnehmenden ` +
          `fließen in die nächste Schulung ein; offene Punkte werden in der Übersicht ${i * 7 + s} gesammelt.\n\n` +
          `Beispiel ${s}: Frau Müller prüft am ${1 + (i % 28)}. März die Unterlagen der Gruppe ${String.fromCharCode(65 + (s % 26))} ` +
          `und ergänzt fehlende Angaben zu Verantwortlichkeiten, Fristen und Ergebnissen des Projekts ${i}.`,
      );
    }
    writeFileSync(
      path.join(dir, `schulung-${String(i).padStart(4, '0')}.md`),
      `# Schulungsunterlage ${i}\n\n${sections.join('\n\n')}\n`,
    );
  }
}

/**
 * Small real documents from ../shared/corpus (when present), copied into the temporary source folder: Markdown,
 * text, DOCX and PPTX files under 40 KB. Returns how many.
 */
export function copyCorpusMix(dir: string, limit = 30): number {
  const corpus = path.resolve(projectRoot, '../shared/corpus');
  if (!existsSync(corpus)) return 0;
  const picked: string[] = [];
  for (const kind of ['md', 'txt', 'docx', 'pptx']) {
    const folder = path.join(corpus, kind);
    if (!existsSync(folder)) continue;
    for (const name of readdirSync(folder).sort()) {
      const file = path.join(folder, name);
      if (statSync(file).isFile() && statSync(file).size <= 40_000) picked.push(file);
    }
  }
  const chosen = picked
    .filter((_, i) => i % Math.max(1, Math.ceil(picked.length / limit)) === 0)
    .slice(0, limit);
  const target = path.join(dir, 'korpus');
  mkdirSync(target, { recursive: true });
  for (const file of chosen) {
    copyFileSync(file, path.join(target, `${path.basename(path.dirname(file))}-${path.basename(file)}`));
  }
  return chosen.length;
}

const planAndRun = async (engine: Engine, sourceDir: string) =>
  runPipeline(engine, {
    plan: await planPipeline(engine.dbs.content.sql, engine.registry, 'Standard'),
    sourceDir,
    concurrency: 2,
    command: 'fault suite baseline',
  });

/** The reference: one fault-free in-process run over the folder on SQLite. */
export async function computeExpected(
  sourceDir: string,
  generated: number,
  fromCorpus: number,
): Promise<Expected> {
  const setup = createTestSetup('sqlite');
  const engine = await setup.open();
  try {
    await planAndRun(engine, sourceDir);
    const rows = await engine.dbs.content.sql.query<{ source_path: string; status: string; chunks: number }>(
      `SELECT d.source_path, d.status, (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) AS chunks
       FROM documents d WHERE d.is_latest = 1 OR d.status <> 'done'`,
    );
    const byPath = new Map(rows.map((r) => [r.source_path, { status: r.status, chunks: Number(r.chunks) }]));
    return { sourceDir, byPath, generated, fromCorpus };
  } finally {
    await engine.close();
    await setup.cleanup();
  }
}

/** Every compiled file in dist/ is at least as new as its source: the built CLI starts faster than tsx. */
function distIsFresh(): boolean {
  const check = (dir: string): boolean =>
    readdirSync(path.join(projectRoot, dir), { withFileTypes: true }).every((entry) => {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) return check(rel);
      if (!entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) return true;
      const built = path.join(projectRoot, 'dist', rel.replace(/\.ts$/, '.js'));
      return existsSync(built) && statSync(built).mtimeMs >= statSync(path.join(projectRoot, rel)).mtimeMs;
    });
  try {
    return check('src') && check('steps');
  } catch {
    return false;
  }
}

/** How `cpe` is started: FAULT_CLI=dist|tsx, default dist when it is up to date (CI builds first), else tsx. */
export const cliMode: 'dist' | 'tsx' =
  process.env.FAULT_CLI === 'tsx'
    ? 'tsx'
    : process.env.FAULT_CLI === 'dist' || distIsFresh()
      ? 'dist'
      : 'tsx';

export function spawnCpe(args: string[], env: NodeJS.ProcessEnv) {
  const entry =
    cliMode === 'dist'
      ? [path.join(projectRoot, 'bin/cpe.js')]
      : ['--import', 'tsx', path.join(projectRoot, 'src/cli/bin.ts')];
  return spawn(process.execPath, [...entry, ...args], {
    env: { ...env, CI: '1' },
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export interface Worker {
  name: string;
  child: ChildProcessByStdio<null, Readable, Readable>;
  pid: number;
  /** resolves when the process has exited */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  output(): string;
}

/**
 * One fault case: fresh MariaDB databases, fresh Ollama and Qdrant test servers (in this process, so the test can
 * stop and start them), and real `cpe worker` / `cpe run` child processes pointed at them.
 */
export class FaultCase {
  readonly setup: TestSetup;
  readonly env: NodeJS.ProcessEnv;
  readonly workers: Worker[] = [];
  engine!: Engine;
  ollama!: OllamaTestServer;
  qdrant!: QdrantTestServer;
  private closers: Array<() => Promise<void>> = [];
  private startedAt = 0;

  constructor(
    readonly name: string,
    readonly expected: Expected,
  ) {
    this.setup = createTestSetup('mysql');
    this.env = { ...this.setup.env };
  }

  /** Databases migrated and seeded (once, before any worker starts), test servers up. */
  async start(): Promise<void> {
    const ollama = await startOllamaServer();
    // chat answers exist, but the fault cases keep analyze skipped (see the env below) to spend the time on faults
    const chat = newOllamaChatState();
    ollama.server.mount((req, res, body) => handleOllamaChat(chat, req, res, body));
    const qdrant = await startQdrantServer();
    this.ollama = ollama.server;
    this.qdrant = qdrant.server;
    this.closers.push(ollama.close, qdrant.close);
    Object.assign(this.env, {
      CPE_OLLAMA_HOST: ollama.url,
      CPE_QDRANT_URL: qdrant.url,
      // LLM steps end skipped (no key for the chosen provider): these cases are about documents, chunks and points
      CPE_LLM_PROVIDER: 'anthropic',
      CPE_LEASE_SECONDS: '8',
      CPE_CONCURRENCY: '2',
      CPE_LOG_LEVEL: 'info',
    });
    delete this.env.ANTHROPIC_API_KEY;
    delete this.env.CPE_RETRY_BASE_MS; // the default (1 s, doubling, capped at 30 s): what users get
    this.engine = await this.setup.open({ ollamaHosts: [ollama.url], qdrantUrl: qdrant.url });
    this.startedAt = Date.now();
  }

  /** `cpe scan`: queues every file of the folder. */
  async scan(): Promise<void> {
    const result = await this.cli(['scan', `--source=${this.expected.sourceDir}`]);
    if (result.code !== 0) throw new Error(`cpe scan exited ${result.code}: ${result.output}`);
  }

  markStart(): void {
    this.startedAt = Date.now();
  }

  cli(args: string[]): Promise<{ code: number | null; output: string }> {
    const worker = this.spawn('cli', args);
    return worker.exited.then((exit) => ({ code: exit.code, output: worker.output() }));
  }

  spawn(name: string, args: string[]): Worker {
    const child = spawnCpe(args, this.env);
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
      if (output.length > 400_000) output = output.slice(-200_000);
    });
    child.stderr.on('data', (d) => {
      output += d;
      if (output.length > 400_000) output = output.slice(-200_000);
    });
    const worker: Worker = {
      name,
      child,
      pid: child.pid!,
      exited: new Promise((resolve) => {
        child.on('close', (code, signal) => {
          worker.exit = { code, signal };
          resolve({ code, signal });
        });
      }),
      output: () => output,
    };
    return worker;
  }

  /** A `cpe worker` child process. */
  startWorker(extra: string[] = []): Worker {
    const worker = this.spawn(`worker-${this.workers.length + 1}`, ['worker', ...extra]);
    this.workers.push(worker);
    return worker;
  }

  /** Starts `n` workers and waits until each has begun its run (its signal handlers are in place by then). */
  async startWorkers(n: number): Promise<Worker[]> {
    const started = Array.from({ length: n }, () => this.startWorker());
    await Promise.all(started.map((w) => this.waitForReady(w)));
    return started;
  }

  /** Waits until the worker's run is recorded in ki_dev.pipeline_runs (by its pid). */
  async waitForReady(worker: Worker, timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && !worker.exit) {
      try {
        const [row] = await this.engine.dbs.log.sql.query<{ n: number }>(
          'SELECT COUNT(*) AS n FROM pipeline_runs WHERE pid = ? AND host = ?',
          [worker.pid, os.hostname()],
        );
        if (Number(row?.n) > 0) return;
      } catch {
        /* the database may be restarting */
      }
      await pause(200);
    }
    throw new Error(`${worker.name} did not start its run: ${worker.output().slice(-2000)}`);
  }

  /** The lease owner name a worker writes into pipeline_queue.locked_by starts with this. */
  leasePrefix(worker: Worker): string {
    return `${os.hostname()}:${worker.pid}:`;
  }

  async queueCounts(): Promise<Record<string, number>> {
    const rows = await this.engine.dbs.content.sql.query<{ status: string; retrying: number; n: number }>(
      `SELECT status, CASE WHEN status = 'failed' AND next_attempt_at IS NOT NULL THEN 1 ELSE 0 END AS retrying,
         COUNT(*) AS n FROM pipeline_queue GROUP BY status, retrying`,
    );
    const counts: Record<string, number> = {
      pending: 0,
      processing: 0,
      done: 0,
      failed: 0,
      retrying: 0,
      dead: 0,
    };
    for (const row of rows) counts[Number(row.retrying) ? 'retrying' : row.status] = Number(row.n);
    return counts;
  }

  /** Polls the queue (through database restarts) until `done` says so; false on timeout. */
  async waitUntil(done: (counts: Record<string, number>) => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      try {
        if (done(await this.queueCounts())) return true;
      } catch {
        /* the database may be restarting: poll again */
      }
      await pause(500);
    }
    return false;
  }

  /** Failed step attempts recorded in ki_dev, per step and error code (evidence that a fault was felt). */
  async failedSteps(): Promise<Record<string, number>> {
    const rows = await this.engine.dbs.log.sql.query<{
      step_name: string;
      error_code: string | null;
      n: number;
    }>(
      "SELECT step_name, error_code, COUNT(*) AS n FROM pipeline_step_runs WHERE status = 'failed' GROUP BY step_name, error_code",
    );
    return Object.fromEntries(rows.map((r) => [`${r.step_name}:${r.error_code ?? '-'}`, Number(r.n)]));
  }

  /**
   * Of these queue items, how many are not finished, or were given up (dead): items a killed worker held, started or
   * claimed ahead, must all be taken over and finished by the others.
   */
  async unfinishedOrGivenUp(ids: readonly number[]): Promise<number> {
    if (ids.length === 0) return 0;
    const [row] = await this.engine.dbs.content.sql.query<{ n: number }>(
      `SELECT COUNT(*) AS n FROM pipeline_queue WHERE id IN (${ids.map(() => '?').join(', ')})
         AND status IN ('pending', 'processing', 'dead')`,
      [...ids],
    );
    return Number(row?.n ?? 0);
  }

  /** Waits until at least `n` queue items are done. */
  waitForDone(n: number, timeoutMs = 180_000): Promise<boolean> {
    return this.waitUntil((c) => c.done >= n, timeoutMs);
  }

  /** Waits until nothing is pending, processing or waiting for a retry. */
  waitUntilSettled(timeoutMs = 240_000): Promise<boolean> {
    return this.waitUntil(
      (c) =>
        c.pending + c.processing + c.retrying === 0 &&
        c.done + c.failed + c.dead >= this.expected.byPath.size,
      timeoutMs,
    );
  }

  /** Waits until the worker holds at least one lease (so killing it leaves work behind). */
  async waitForLease(worker: Worker, timeoutMs = 60_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const held = await this.heldBy(worker);
      if (held > 0) return held;
      await pause(100);
    }
    return 0;
  }

  /** Queue items the worker holds a lease on now. */
  async heldBy(worker: Worker): Promise<number> {
    return (await this.heldItems(worker)).length;
  }

  /** The ids of the queue items the worker holds a lease on now. */
  async heldItems(worker: Worker): Promise<number[]> {
    const rows = await this.engine.dbs.content.sql.query<{ id: number }>(
      "SELECT id FROM pipeline_queue WHERE status = 'processing' AND locked_by LIKE ?",
      [`${this.leasePrefix(worker)}%`],
    );
    return rows.map((r) => Number(r.id));
  }

  /** SIGTERM to every worker still running; their exits are checked by verify(). */
  async stopWorkers(timeoutMs = 60_000): Promise<void> {
    const running = this.workers.filter((w) => !w.exit);
    await Promise.all(running.map((w) => this.waitForReady(w)));
    for (const worker of running) worker.child.kill('SIGTERM');
    // cleared once they are gone: a pending timer kept the test process alive for a minute after the last case
    const timer = setTimeout(() => {
      for (const worker of running) if (!worker.exit) worker.child.kill('SIGKILL');
    }, timeoutMs);
    try {
      await Promise.all(running.map((w) => w.exited));
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Compares what a user would see with the expectation: one document row per source file with the expected
   * status, exactly the expected chunks, one Qdrant point per chunk (and no others), every queue item finished
   * and unlocked. Returns the table row; `problems` lists every difference.
   */
  async verify(options: { expectedExits?: Map<Worker, number | 'SIGKILL'> } = {}): Promise<CaseResult> {
    const wallMs = Date.now() - this.startedAt;
    const db = this.engine.dbs.content.sql;
    const problems: string[] = [];
    let duplicates = 0;
    let lost = 0;
    let stuck = 0;

    const docs = await db.query<{ id: number; source_path: string; status: string; is_latest: number }>(
      'SELECT id, source_path, status, is_latest FROM documents ORDER BY id',
    );
    const chunkRows = await db.query<{ document_id: number; n: number; indexes: number }>(
      'SELECT document_id, COUNT(*) AS n, COUNT(DISTINCT chunk_index) AS indexes FROM chunks GROUP BY document_id',
    );
    const chunksOf = new Map(chunkRows.map((r) => [Number(r.document_id), Number(r.n)]));
    for (const r of chunkRows) {
      if (Number(r.indexes) !== Number(r.n)) {
        duplicates += Number(r.n) - Number(r.indexes);
        problems.push(`document ${r.document_id}: ${r.n} chunks but ${r.indexes} distinct chunk indexes`);
      }
    }
    const pointsOf = new Map<number, number>();
    for (const point of this.qdrant.points('documents')) {
      const id = Number(point.payload.document_id);
      pointsOf.set(id, (pointsOf.get(id) ?? 0) + 1);
    }
    const docsByPath = new Map<string, typeof docs>();
    for (const doc of docs)
      docsByPath.set(doc.source_path, [...(docsByPath.get(doc.source_path) ?? []), doc]);

    for (const [sourcePath, want] of this.expected.byPath) {
      const rows = docsByPath.get(sourcePath) ?? [];
      const short = path.relative(this.expected.sourceDir, sourcePath);
      if (rows.length === 0) {
        lost++;
        problems.push(`${short}: no document row`);
        continue;
      }
      if (rows.length > 1) {
        duplicates += rows.length - 1;
        problems.push(
          `${short}: ${rows.length} document rows (${rows.map((r) => `${r.id}:${r.status}`).join(', ')})`,
        );
      }
      const doc = rows[rows.length - 1]!;
      const id = Number(doc.id);
      if (doc.status === 'processing' || doc.status === 'pending') {
        stuck++;
        problems.push(`${short}: document ${id} still ${doc.status}`);
        continue;
      }
      if (doc.status !== want.status) {
        lost++;
        problems.push(`${short}: document ${id} is ${doc.status}, expected ${want.status}`);
        continue;
      }
      const chunks = chunksOf.get(id) ?? 0;
      if (chunks !== want.chunks) {
        if (chunks > want.chunks) duplicates += chunks - want.chunks;
        else lost++;
        problems.push(`${short}: ${chunks} chunks, expected ${want.chunks}`);
      }
      const points = pointsOf.get(id) ?? 0;
      if (doc.status === 'done' && points !== chunks) {
        if (points > chunks) duplicates += points - chunks;
        else lost++;
        problems.push(`${short}: ${points} points in Qdrant for ${chunks} chunks`);
      }
    }
    const known = new Set(docs.map((d) => Number(d.id)));
    for (const [id, n] of pointsOf) {
      if (!known.has(id) || Number(docs.find((d) => Number(d.id) === id)?.is_latest) !== 1) {
        duplicates += n;
        problems.push(`${n} points of document ${id}, which is not a latest document`);
      }
    }
    for (const sourcePath of docsByPath.keys()) {
      if (!this.expected.byPath.has(sourcePath)) problems.push(`unexpected document for ${sourcePath}`);
    }

    const queue = await db.query<{
      path: string;
      status: string;
      locked_by: string | null;
      next_attempt_at: string | null;
    }>('SELECT path, status, locked_by, next_attempt_at FROM pipeline_queue');
    const itemsPerPath = new Map<string, number>();
    for (const item of queue) {
      itemsPerPath.set(item.path, (itemsPerPath.get(item.path) ?? 0) + 1);
      const short = path.relative(this.expected.sourceDir, item.path);
      if (item.status === 'pending' || item.status === 'processing' || item.locked_by !== null) {
        stuck++;
        problems.push(`${short}: queue item ${item.status}, locked by ${item.locked_by ?? 'nobody'}`);
      } else if (item.status === 'failed' && item.next_attempt_at !== null) {
        stuck++;
        problems.push(`${short}: queue item still waiting for a retry`);
      } else if (item.status === 'dead') {
        lost++;
        problems.push(`${short}: queue item dead`);
      }
    }
    for (const [itemPath, n] of itemsPerPath) {
      if (n > 1) problems.push(`${path.relative(this.expected.sourceDir, itemPath)}: ${n} queue items`);
    }

    for (const [worker, want] of options.expectedExits ?? new Map()) {
      const exit = worker.exit ?? (await worker.exited);
      const ok = want === 'SIGKILL' ? exit.signal === 'SIGKILL' : exit.code === want;
      if (!ok) {
        problems.push(
          `${worker.name} (pid ${worker.pid}) ended with code ${exit.code} signal ${exit.signal}, expected ${want}; ` +
            `its output ended with:\n${worker.output().slice(-3000)}`,
        );
      }
    }
    return {
      name: this.name,
      documents: this.expected.byPath.size,
      duplicates,
      lost,
      stuck,
      wallMs,
      problems,
    };
  }

  /** Stops what is still running and drops the databases; safe to call after a failure. */
  async cleanup(): Promise<void> {
    for (const worker of this.workers) if (!worker.exit) worker.child.kill('SIGKILL');
    await Promise.all(this.workers.map((w) => w.exited));
    await this.engine?.close().catch(() => undefined);
    for (const close of this.closers) await close().catch(() => undefined);
    await this.setup.cleanup().catch(() => undefined);
  }
}

export function formatTable(rows: CaseResult[]): string {
  const header = ['case', 'documents', 'duplicates', 'lost', 'stuck', 'wall time'];
  const body = rows.map((r) => [
    r.name,
    String(r.documents),
    String(r.duplicates),
    String(r.lost),
    String(r.stuck),
    `${(r.wallMs / 1000).toFixed(1)} s`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** A source folder shared by every case: generated documents plus the corpus mix. */
export function makeFaultSource(generated: number): { dir: string; fromCorpus: number } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cpe-faults-'));
  writeGeneratedDocuments(dir, generated);
  return { dir, fromCorpus: copyCorpusMix(dir) };
}

export { planAndRun };
